/**
 * RFC 8705 mutual-TLS client authentication at the OAuth endpoints, over the gateway's
 * real TLS listener (`clientCertificates: request`, the test CA trusted) with openssl-made
 * certificates: `tls_client_auth` by subject DN and by SAN, `self_signed_tls_client_auth`
 * by the client's registered key, every refusal an RFC 6749 `invalid_client` with its
 * private reason in the access line; the token bound to the certificate (`cnf`, RFC 8705
 * §3.1), revocation and introspection authenticated the same way, introspection
 * returning `cnf` (§3.2), the metadata (§3.3), and oauth4webapi's `TlsClientAuth`.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import { fetch as undiciFetch } from 'undici';
import { certificateThumbprint } from '../../src/domain/clientCertificate.js';
import {
  createTestPki,
  type IssuedCertificate,
  selfSigned,
  type TestPki,
} from '../helpers/certificates.js';
import { CLIENT_ID, CLIENT_SECRET, type ClientSpec, DEFAULT_CLIENTS } from '../helpers/fixture.js';
import { startTlsGateway, type TlsGateway } from '../helpers/tlsGateway.js';
import { accessLineOf } from '../helpers/wait.js';
import { basic } from './formRequests.js';
import { certificateJwks, namedClientCertificate } from './mtlsCertificates.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const ISSUER = 'https://portaria.test';

interface Certificates {
  readonly pki: TestPki;
  /** The CA issued it: `/C=PT/O=Acme/CN=partner`, SANs DNS and URI. */
  readonly partner: IssuedCertificate;
  /** The CA issued it: `/C=PT/O=Acme/CN=intruder`. */
  readonly intruder: IssuedCertificate;
  /** The untrusted CA issued it, with the partner's subject (and another key). */
  readonly lookalike: IssuedCertificate;
  /** The CA issued it, for the introspecting resource server. */
  readonly resourceServer: IssuedCertificate;
  /** Self-signed, another key than `pki.selfSignedClient`'s. */
  readonly otherSelfSigned: IssuedCertificate;
}

const CLIENTS: ClientSpec[] = [
  ...DEFAULT_CLIENTS,
  {
    id: 'by-dn',
    secret: '',
    scopes: ['orders:read'],
    extra: {
      authMethods: ['tls_client_auth'],
      tlsClientAuth: { subjectDn: 'CN=partner,O=Acme,C=PT' },
    },
  },
  {
    id: 'by-san',
    secret: '',
    scopes: ['orders:read'],
    extra: { authMethods: ['tls_client_auth'], tlsClientAuth: { sanDns: 'PARTNER.example.com' } },
  },
  {
    id: 'self-signed',
    secret: '',
    scopes: ['orders:read'],
    extra: { authMethods: ['self_signed_tls_client_auth'], jwksFile: 'self-signed.jwks.json' },
  },
  {
    id: 'introspector',
    secret: '',
    scopes: ['introspection'],
    extra: {
      authMethods: ['tls_client_auth'],
      tlsClientAuth: { sanUri: 'spiffe://example.com/orders-api' },
      permissions: ['introspect'],
    },
  },
  {
    id: 'strict',
    secret: 'strict-secret-0123456789abcdefghijklmnopq',
    scopes: ['orders:read'],
    extra: { requireCertificate: true },
  },
];

async function start(t: TestContext, certs: Certificates): Promise<TlsGateway> {
  const gw = await startTlsGateway(t, {
    pki: certs.pki,
    clientCertificates: 'request',
    clients: CLIENTS,
    settings: (upstream) => ({
      routes: [{ id: 'orders', prefix: '/v1/orders', upstream, scopes: ['orders:read'] }],
    }),
  });
  // Read on the client's first authentication.
  await writeFile(
    join(gw.dir, 'self-signed.jwks.json'),
    await certificateJwks(certs.pki.selfSignedClient),
  );
  return gw;
}

function post(
  gw: TlsGateway,
  path: string,
  form: Record<string, string>,
  certificate: IssuedCertificate | null,
  authorization?: string,
) {
  return gw.fetch(
    path,
    {
      method: 'POST',
      headers: { ...FORM, ...(authorization === undefined ? {} : { authorization }) },
      body: new URLSearchParams(form).toString(),
    },
    certificate,
  );
}

function tokenRequest(gw: TlsGateway, clientId: string, certificate: IssuedCertificate | null) {
  return post(
    gw,
    '/oauth2/token',
    { grant_type: 'client_credentials', client_id: clientId },
    certificate,
  );
}

/** A refusal: 401, RFC 6749 `invalid_client`, no-store, and `reason` in the access line. */
async function assertRefused(
  gw: TlsGateway,
  res: Awaited<ReturnType<TlsGateway['fetch']>>,
  reason: string,
): Promise<void> {
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const body = (await res.json()) as Record<string, unknown>;
  assert.equal(body.error, 'invalid_client');
  assert.equal(typeof body.error_description, 'string');
  const line = await accessLineOf(gw.logs, String(res.headers.get('x-request-id')));
  assert.equal(line['portaria.reason'], reason);
}

async function issued(res: Awaited<ReturnType<TlsGateway['fetch']>>): Promise<string> {
  const body = (await res.json()) as Record<string, unknown>;
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.token_type, 'Bearer');
  return body.access_token as string;
}

function cnfOf(token: string): unknown {
  return decodeJwt(token).cnf;
}

describe('RFC 8705 client authentication at the OAuth endpoints', () => {
  let dir = '';
  let certs: Certificates;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'portaria-mtls-'));
    const pki = await createTestPki(dir);
    const partner = await namedClientCertificate(dir, pki.ca, 'partner', {
      subject: '/C=PT/O=Acme/CN=partner',
      altNames: ['DNS:partner.example.com', 'URI:spiffe://example.com/partner'],
    });
    const intruder = await namedClientCertificate(dir, pki.ca, 'intruder', {
      subject: '/C=PT/O=Acme/CN=intruder',
      altNames: ['DNS:intruder.example.com'],
    });
    const lookalike = await namedClientCertificate(dir, pki.otherCa, 'lookalike', {
      subject: '/C=PT/O=Acme/CN=partner',
      altNames: ['DNS:partner.example.com'],
    });
    const resourceServer = await namedClientCertificate(dir, pki.ca, 'orders-api', {
      subject: '/O=Acme/CN=orders-api',
      altNames: ['URI:spiffe://example.com/orders-api'],
    });
    const otherSelfSigned = await selfSigned(dir, 'other-self-signed', { use: 'client' });
    certs = { pki, partner, intruder, lookalike, resourceServer, otherSelfSigned };
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('tls_client_auth and self_signed_tls_client_auth at the token endpoint', async (t) => {
    const gw = await start(t, certs);
    const { pki, partner } = certs;

    await t.test('by subject DN: a token bound to the certificate, usable with it', async () => {
      const token = await issued(await tokenRequest(gw, 'by-dn', partner));
      assert.deepEqual(cnfOf(token), { 'x5t#S256': certificateThumbprint(partner.der) });
      assert.equal(decodeJwt(token).sub, 'by-dn');
      const res = await gw.fetch(
        '/v1/orders/1',
        { headers: { authorization: `Bearer ${token}` } },
        partner,
      );
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    });

    await t.test('by SAN dNSName, case-insensitively', async () => {
      const token = await issued(await tokenRequest(gw, 'by-san', partner));
      assert.deepEqual(cnfOf(token), { 'x5t#S256': certificateThumbprint(partner.der) });
    });

    await t.test('self-signed, by the client’s registered key: bound to it', async () => {
      const token = await issued(await tokenRequest(gw, 'self-signed', pki.selfSignedClient));
      assert.deepEqual(cnfOf(token), {
        'x5t#S256': certificateThumbprint(pki.selfSignedClient.der),
      });
    });

    const refusals: readonly [string, string, () => IssuedCertificate | null, string][] = [
      [
        'a verified certificate of another DN',
        'by-dn',
        () => certs.intruder,
        'certificate-identity-mismatch',
      ],
      [
        'a verified certificate without the SAN',
        'by-san',
        () => certs.intruder,
        'certificate-identity-mismatch',
      ],
      ['no certificate', 'by-dn', () => null, 'no-client-auth'],
      [
        'a certificate of an untrusted CA',
        'by-dn',
        () => pki.wrongCaClient,
        'certificate-untrusted',
      ],
      ['an expired certificate', 'by-dn', () => pki.expiredClient, 'certificate-expired'],
      [
        'the same subject and SAN from another CA, with another key',
        'by-dn',
        () => certs.lookalike,
        'certificate-untrusted',
      ],
      [
        'a self-signed one for tls_client_auth',
        'by-dn',
        () => pki.selfSignedClient,
        'certificate-self-signed',
      ],
      [
        'a self-signed certificate of another key',
        'self-signed',
        () => certs.otherSelfSigned,
        'certificate-key-mismatch',
      ],
      [
        'a CA-issued certificate whose key is not the client’s',
        'self-signed',
        () => partner,
        'certificate-key-mismatch',
      ],
      ['a client that allows secrets only', CLIENT_ID, () => partner, 'auth-method-not-allowed'],
      ['an unknown client', 'nobody', () => partner, 'unknown-client'],
    ];
    for (const [name, clientId, certificate, reason] of refusals) {
      await t.test(`refused: ${name} (${reason})`, async () => {
        await assertRefused(gw, await tokenRequest(gw, clientId, certificate()), reason);
      });
    }

    await t.test(
      'a secret and a certificate: the token is bound as at the contract’s operation',
      async () => {
        const res = await post(
          gw,
          '/oauth2/token',
          { grant_type: 'client_credentials' },
          partner,
          basic(),
        );
        const token = await issued(res);
        assert.deepEqual(cnfOf(token), { 'x5t#S256': certificateThumbprint(partner.der) });
        const bearer = await issued(
          await post(gw, '/oauth2/token', { grant_type: 'client_credentials' }, null, basic()),
        );
        assert.equal(cnfOf(bearer), undefined);
      },
    );

    await t.test(
      'a secret with an unverified certificate, or requireCertificate without one: 401',
      async () => {
        const untrusted = await post(
          gw,
          '/oauth2/token',
          { grant_type: 'client_credentials' },
          pki.wrongCaClient,
          basic(CLIENT_ID, CLIENT_SECRET),
        );
        assert.equal(untrusted.status, 401);
        assert.equal(((await untrusted.json()) as Record<string, unknown>).error, 'invalid_client');
        const strict = await post(
          gw,
          '/oauth2/token',
          { grant_type: 'client_credentials' },
          null,
          basic('strict', 'strict-secret-0123456789abcdefghijklmnopq'),
        );
        assert.equal(strict.status, 401);
        assert.equal(((await strict.json()) as Record<string, unknown>).error, 'invalid_client');
      },
    );
  });

  test('revocation and introspection authenticate by certificate; introspection returns cnf', async (t) => {
    const gw = await start(t, certs);
    const { partner, resourceServer } = certs;
    const bound = await issued(await tokenRequest(gw, 'by-dn', partner));
    const bearer = await issued(
      await post(gw, '/oauth2/token', { grant_type: 'client_credentials' }, null, basic()),
    );

    const introspect = async (token: string) => {
      const res = await post(
        gw,
        '/oauth2/introspect',
        { client_id: 'introspector', token },
        resourceServer,
      );
      assert.equal(res.status, 200);
      return (await res.json()) as Record<string, unknown>;
    };
    const described = await introspect(bound);
    assert.equal(described.active, true);
    assert.equal(described.client_id, 'by-dn');
    assert.deepEqual(described.cnf, { 'x5t#S256': certificateThumbprint(partner.der) });
    const plain = await introspect(bearer);
    assert.equal(plain.active, true);
    assert.equal('cnf' in plain, false);

    await assertRefused(
      gw,
      await post(gw, '/oauth2/introspect', { client_id: 'introspector', token: bound }, partner),
      'certificate-identity-mismatch',
    );

    const revoked = await post(gw, '/oauth2/revoke', { client_id: 'by-dn', token: bound }, partner);
    assert.equal(revoked.status, 200);
    await revoked.arrayBuffer();
    assert.deepEqual(await introspect(bound), { active: false });
    await assertRefused(
      gw,
      await post(gw, '/oauth2/revoke', { client_id: 'by-dn', token: bearer }, certs.intruder),
      'certificate-identity-mismatch',
    );
  });

  test('the metadata lists the tls methods and certificate-bound tokens', async (t) => {
    const gw = await start(t, certs);
    const res = await gw.fetch('/.well-known/oauth-authorization-server', {}, null);
    const metadata = (await res.json()) as Record<string, unknown>;
    for (const endpoint of ['token', 'revocation', 'introspection']) {
      assert.deepEqual(metadata[`${endpoint}_endpoint_auth_methods_supported`], [
        'client_secret_basic',
        'client_secret_post',
        'private_key_jwt',
        'tls_client_auth',
        'self_signed_tls_client_auth',
      ]);
    }
    assert.equal(metadata.tls_client_certificate_bound_access_tokens, true);
  });

  test('oauth4webapi: TlsClientAuth over its customFetch with the client certificate', async (t) => {
    const gw = await start(t, certs);
    const agent = gw.agent(certs.partner);
    const as: oauth.AuthorizationServer = {
      issuer: ISSUER,
      token_endpoint: `${gw.url}/oauth2/token`,
    };
    const client: oauth.Client = { client_id: 'by-dn' };
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      client,
      oauth.TlsClientAuth(),
      new URLSearchParams({ scope: 'orders:read' }),
      {
        [oauth.customFetch]: (url, options) =>
          undiciFetch(url, {
            ...options,
            dispatcher: agent,
          } as never) as unknown as Promise<Response>,
      },
    );
    const result = await oauth.processClientCredentialsResponse(as, client, response);
    assert.equal(result.scope, 'orders:read');
    assert.deepEqual(cnfOf(result.access_token), {
      'x5t#S256': certificateThumbprint(certs.partner.der),
    });
  });
});
