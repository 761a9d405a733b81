/**
 * Certificate-bound tokens (RFC 8705 §3) through the HTTP decision entries: the proxy in
 * front terminated mutual TLS and passes the certificate in its header
 * (`clientCertificate.source: header`, RFC 9440 `Client-Cert`); the binding step sees it
 * exactly as in proxy mode.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type IssuedCertificate, TestCa } from '../helpers/certificates.js';
import { DEFAULT_CLIENTS, problemOf, startGateway } from '../helpers/fixture.js';
import { namedClientCertificate } from '../oauth/mtlsCertificates.js';

const header = (certificate: IssuedCertificate) => `:${certificate.der.toString('base64')}:`;

describe('certificate-bound tokens through decisions', () => {
  let dir = '';
  let ca: TestCa;
  let partner: IssuedCertificate;
  let thief: IssuedCertificate;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'portaria-bound-decisions-'));
    ca = await TestCa.create(dir, 'proxy-ca');
    partner = await namedClientCertificate(dir, ca, 'partner', { subject: '/O=Acme/CN=partner' });
    thief = await namedClientCertificate(dir, ca, 'thief', { subject: '/O=Evil/CN=thief' });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('the bound certificate passes; another, or none, is refused; bearer tokens where binding is required too', async (t) => {
    const gw = await startGateway(t, {
      clients: [
        ...DEFAULT_CLIENTS,
        {
          id: 'partner',
          secret: '',
          scopes: ['orders:read'],
          extra: {
            authMethods: ['tls_client_auth'],
            tlsClientAuth: { subjectDn: 'CN=partner,O=Acme' },
          },
        },
      ],
      settings: () => ({
        mode: 'authorizer',
        server: { trustedProxies: ['127.0.0.1'] },
        clientCertificate: { source: 'header', caFiles: [ca.certFile] },
        authorizer: { host: '127.0.0.1', port: 0, grpc: { enabled: false } },
        upstream: { default: null },
        routes: [
          { id: 'orders', prefix: '/v1/orders', scopes: ['orders:read'] },
          { id: 'payments', prefix: '/v1/payments', requireCertificateBound: true },
        ],
      }),
    });
    const issued = await fetch(`${gw.url}/oauth2/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'client-cert': header(partner),
      },
      body: 'grant_type=client_credentials&client_id=partner',
    });
    assert.equal(issued.status, 200);
    const bound = ((await issued.json()) as { access_token: string }).access_token;
    const ask = (uri: string, token: string, certificate?: IssuedCertificate) =>
      fetch(`${gw.authorizerUrl}/nginx`, {
        headers: {
          authorization: `Bearer ${token}`,
          'x-original-method': 'GET',
          'x-original-uri': uri,
          ...(certificate === undefined ? {} : { 'client-cert': header(certificate) }),
        },
      });
    assert.equal((await ask('/v1/orders/1', bound, partner)).status, 200);
    const stolen = await ask('/v1/orders/1', bound, thief);
    assert.equal(stolen.status, 401);
    assert.equal((await problemOf(stolen)).tipo, 'urn:portaria:problem:token-binding-failed');
    assert.match(stolen.headers.get('www-authenticate') ?? '', /invalid_token/);
    assert.equal((await ask('/v1/orders/1', bound)).status, 401);
    const bearer = await gw.token();
    const unbound = await ask('/v1/payments/1', bearer, partner);
    assert.equal(unbound.status, 401);
    assert.equal((await problemOf(unbound)).tipo, 'urn:portaria:problem:token-binding-required');
    assert.equal((await ask('/v1/payments/1', bound, partner)).status, 200);
  });
});
