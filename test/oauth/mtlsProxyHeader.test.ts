/**
 * RFC 8705 client authentication with the certificate a trusted proxy terminated mutual
 * TLS for (`clientCertificate.source: header`, RFC 9440 `Client-Cert`), through a real
 * gateway: the proxy (127.0.0.2, in `server.trustedProxies`) is believed, anyone else's
 * header is not; the token is bound to the header's certificate.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import { certificateThumbprint } from '../../src/domain/clientCertificate.js';
import { type IssuedCertificate, TestCa } from '../helpers/certificates.js';
import { DEFAULT_CLIENTS, type Gateway, startGateway } from '../helpers/fixture.js';
import { accessLineOf } from '../helpers/wait.js';
import { namedClientCertificate } from './mtlsCertificates.js';

const PROXY = '127.0.0.2';
const ANYONE = '127.0.0.1';

interface Answer {
  readonly status: number;
  readonly requestId: string;
  readonly body: Record<string, unknown>;
}

/** POSTs a token request from `from` carrying `certificate` in `Client-Cert` (RFC 9440 §2). */
function tokenRequest(gw: Gateway, from: string, certificate: IssuedCertificate): Promise<Answer> {
  const { hostname, port } = new URL(gw.url);
  const body = 'grant_type=client_credentials&client_id=partner';
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: hostname,
        port,
        method: 'POST',
        path: '/oauth2/token',
        localAddress: from,
        agent: false,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(body),
          'client-cert': `:${certificate.der.toString('base64')}:`,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            requestId: String(res.headers['x-request-id']),
            body: JSON.parse(text) as Record<string, unknown>,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('tls_client_auth behind a proxy terminating mutual TLS', () => {
  let dir = '';
  let ca: TestCa;
  let partner: IssuedCertificate;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'portaria-mtls-header-'));
    ca = await TestCa.create(dir, 'proxy-ca');
    partner = await namedClientCertificate(dir, ca, 'partner', {
      subject: '/O=Acme/CN=partner',
      altNames: ['DNS:partner.example.com'],
    });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test("the trusted proxy's certificate authenticates and binds; anyone else's header is ignored", async (t) => {
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
        server: { trustedProxies: [PROXY] },
        clientCertificate: { source: 'header', caFiles: [ca.certFile] },
      }),
    });
    const viaProxy = await tokenRequest(gw, PROXY, partner);
    assert.equal(viaProxy.status, 200, JSON.stringify(viaProxy.body));
    assert.deepEqual(decodeJwt(viaProxy.body.access_token as string).cnf, {
      'x5t#S256': certificateThumbprint(partner.der),
    });
    const direct = await tokenRequest(gw, ANYONE, partner);
    assert.equal(direct.status, 401);
    assert.equal(direct.body.error, 'invalid_client');
    const line = await accessLineOf(gw.logs, direct.requestId);
    assert.equal(line['portaria.reason'], 'no-client-auth');
  });
});
