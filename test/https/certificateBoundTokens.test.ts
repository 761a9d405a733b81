/**
 * Certificate-bound access tokens (RFC 8705 §3) over real mutual TLS: the contract's
 * operation binds the token it issues to the connection's verified certificate
 * (`cnf.x5t#S256`), and the edge lets a bound token through only with that very
 * certificate, on every request, cached token or not. Routes and clients can require
 * bound tokens; the certificate's identity reaches the upstream in the reserved headers.
 */
import assert from 'node:assert/strict';
import { createHash, X509Certificate } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import { decodeJwt, SignJWT } from 'jose';
import { createTestPki, type IssuedCertificate, type TestPki } from '../helpers/certificates.js';
import { CLIENT_ID, CLIENT_SECRET, DEFAULT_CLIENTS } from '../helpers/fixture.js';
import { ecKey, jwksOf } from '../helpers/jwksServer.js';
import { tempDir } from '../helpers/process.js';
import { startTlsGateway, type TlsGateway } from '../helpers/tlsGateway.js';

const BOUND_ONLY = 'bound-only';
const BOUND_ONLY_SECRET = 'bound-only-secret-0123456789abcdefghijklmno';

let pki: TestPki;
/** Same subject (`CN=client`) and CA as `pki.client`, another key. */
let sameSubject: IssuedCertificate;
/** Another partner's certificate from the same CA. */
let otherPartner: IssuedCertificate;
let cleanup: (() => Promise<void>) | undefined;

before(async () => {
  const t = { after: (fn: () => Promise<void>) => (cleanup = fn) } as unknown as TestContext;
  const dir = await tempDir(t, 'portaria-bound-');
  pki = await createTestPki(dir);
  // Issued after `pki.client`, whose files it replaces: the first is kept in memory.
  sameSubject = await pki.ca.issue('client', { use: 'client' });
  otherPartner = await pki.ca.issue('partner-b', { use: 'client' });
});
after(() => cleanup?.());

function thumbprint(cert: IssuedCertificate): string {
  return createHash('sha256').update(cert.der).digest('base64url');
}

const IDP = 'https://idp.partner.test';
/** A trusted external issuer's signing key (its public JWK Set in a key file). */
const idpKey = ecKey('idp-1');

async function gateway(t: TestContext): Promise<TlsGateway> {
  const keyFile = join(await tempDir(t, 'portaria-idp-'), 'idp.jwks.json');
  await writeFile(keyFile, JSON.stringify(jwksOf(idpKey)));
  return startTlsGateway(t, {
    pki,
    clientCertificates: 'request',
    clients: [
      ...DEFAULT_CLIENTS,
      {
        id: BOUND_ONLY,
        secret: BOUND_ONLY_SECRET,
        scopes: ['orders:read'],
        extra: { requireCertificateBound: true },
      },
    ],
    settings: (upstream) => ({
      routes: [
        { id: 'bound', prefix: '/v1/bound', upstream, requireCertificateBound: true },
        { id: 'orders', prefix: '/v1/orders', upstream },
      ],
      upstream: { default: null },
      issuers: [{ id: 'partner-idp', issuer: IDP, keyFile, audiences: ['partner-api'] }],
      identityHeaders: {
        sub: 'X-Client-Id',
        scope: 'X-Token-Scope',
        jti: 'X-Token-Jti',
        'certificate.subject': 'X-Client-Cert-Subject',
        'certificate.san': 'X-Client-Cert-San',
        'certificate.thumbprint': 'X-Client-Cert-Thumbprint',
      },
    }),
  });
}

async function tokenOver(
  gw: TlsGateway,
  cert: IssuedCertificate | null,
  clientId = CLIENT_ID,
  secret = CLIENT_SECRET,
): Promise<Response> {
  return (await gw.fetch(
    '/v1/authentication/accesstoken',
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId, clientSecret: secret }),
    },
    cert,
  )) as unknown as Response;
}

async function tokenOf(res: Response): Promise<string> {
  const body = (await res.json()) as Record<string, unknown>;
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.token_de_acesso as string;
}

async function call(
  gw: TlsGateway,
  path: string,
  token: string,
  cert: IssuedCertificate | null,
  headers: Record<string, string> = {},
): Promise<{ status: number; code: string | undefined; challenge: string | null }> {
  const res = await gw.fetch(
    path,
    { headers: { authorization: `Bearer ${token}`, ...headers } },
    cert,
  );
  const text = await res.text();
  const code =
    res.status >= 400 ? (JSON.parse(text) as { tipo: string }).tipo.split(':').at(-1) : undefined;
  // Without the RFC 9728 pointer, checked on its own below.
  const challenge = res.headers
    .get('www-authenticate')
    ?.replace(/, resource_metadata="[^"]*"$/, '');
  return { status: res.status, code, challenge: challenge ?? null };
}

const INVALID_TOKEN = 'Bearer realm="portaria", error="invalid_token"';

describe('certificate-bound tokens over mutual TLS', () => {
  test('the contract operation binds its token to the verified certificate; without one, a bearer token', async (t) => {
    const gw = await gateway(t);
    const bound = decodeJwt(await tokenOf(await tokenOver(gw, pki.client)));
    assert.deepEqual(bound.cnf, { 'x5t#S256': thumbprint(pki.client) });
    const bearer = decodeJwt(await tokenOf(await tokenOver(gw, null)));
    assert.equal(bearer.cnf, undefined);
  });

  test('a bound token passes with its certificate, cached or not, and the upstream learns who connected', async (t) => {
    const gw = await gateway(t);
    const token = await tokenOf(await tokenOver(gw, pki.client));
    for (let i = 0; i < 3; i++) {
      assert.equal((await call(gw, '/v1/orders/1', token, pki.client)).status, 200);
    }
    assert.equal((await call(gw, '/v1/bound/1', token, pki.client)).status, 200);
    const seen = gw.upstream.received.at(-1);
    assert.equal(seen?.headers['x-client-cert-thumbprint'], thumbprint(pki.client));
    assert.equal(seen?.headers['x-client-cert-subject'], 'CN=client');
    const san = new X509Certificate(pki.client.cert).subjectAltName;
    assert.equal(seen?.headers['x-client-cert-san'], san);
  });

  test('a bound token without its certificate is refused on every request, after it was cached too', async (t) => {
    const gw = await gateway(t);
    const token = await tokenOf(await tokenOver(gw, pki.client));
    // Verified and cached by a request that had the certificate…
    assert.equal((await call(gw, '/v1/orders/1', token, pki.client)).status, 200);
    // …then refused with none, with another partner's, with one of the same subject and
    // CA but another key, and with one from another CA.
    for (const cert of [null, otherPartner, sameSubject, pki.wrongCaClient]) {
      assert.deepEqual(await call(gw, '/v1/orders/1', token, cert), {
        status: 401,
        code: 'token-binding-failed',
        challenge: INVALID_TOKEN,
      });
    }
    // The verified-token cache still serves the rightful holder.
    assert.equal((await call(gw, '/v1/orders/1', token, pki.client)).status, 200);
  });

  test('a route requiring bound tokens refuses a bearer token, and its RFC 9728 metadata says so', async (t) => {
    const gw = await gateway(t);
    const bearer = await tokenOf(await tokenOver(gw, null));
    assert.deepEqual(await call(gw, '/v1/bound/1', bearer, pki.client), {
      status: 401,
      code: 'token-binding-required',
      challenge: INVALID_TOKEN,
    });
    // Elsewhere the bearer token is fine.
    assert.equal((await call(gw, '/v1/orders/1', bearer, null)).status, 200);
    const metadata = async (path: string) =>
      (await (
        await gw.fetch(`/.well-known/oauth-protected-resource${path}`, {}, null)
      ).json()) as Record<string, unknown>;
    assert.equal((await metadata('/v1/bound')).tls_client_certificate_bound_access_tokens, true);
    assert.equal(
      (await metadata('/v1/orders')).tls_client_certificate_bound_access_tokens,
      undefined,
    );
    assert.equal((await metadata('')).tls_client_certificate_bound_access_tokens, undefined);
  });

  test('a client requiring bound tokens gets none without a certificate, and its bound token needs it', async (t) => {
    const gw = await gateway(t);
    const refused = await tokenOver(gw, null, BOUND_ONLY, BOUND_ONLY_SECRET);
    assert.equal(refused.status, 401);
    assert.equal(
      ((await refused.json()) as { tipo: string }).tipo,
      'urn:portaria:problem:certificate-required',
    );
    const token = await tokenOf(await tokenOver(gw, pki.client, BOUND_ONLY, BOUND_ONLY_SECRET));
    assert.equal((await call(gw, '/v1/orders/1', token, pki.client)).status, 200);
    assert.equal((await call(gw, '/v1/orders/1', token, null)).code, 'token-binding-failed');
  });

  test('an unverified certificate at the token operation is refused with its reason, not ignored', async (t) => {
    const gw = await gateway(t);
    for (const [cert, detail] of [
      [pki.wrongCaClient, /not issued by a trusted authority/],
      [pki.expiredClient, /expired/],
      [pki.selfSignedClient, /self-signed|trusted authority/],
    ] as const) {
      const res = await tokenOver(gw, cert);
      const body = (await res.json()) as { tipo: string; detalhe: string };
      assert.equal(res.status, 401);
      assert.equal(body.tipo, 'urn:portaria:problem:certificate-invalid');
      assert.match(body.detalhe, detail);
    }
  });

  test('identity headers a caller writes never reach the upstream, with or without a certificate', async (t) => {
    const gw = await gateway(t);
    const bearer = await tokenOf(await tokenOver(gw, null));
    const spoofed = {
      'x-client-cert-subject': 'CN=bank',
      'x-client-cert-thumbprint': thumbprint(otherPartner),
      'x-client-cert-san': 'DNS:bank.example',
    };
    assert.equal((await call(gw, '/v1/orders/1', bearer, null, spoofed)).status, 200);
    let seen = gw.upstream.received.at(-1);
    assert.equal(seen?.headers['x-client-cert-subject'], undefined);
    assert.equal(seen?.headers['x-client-cert-thumbprint'], undefined);
    assert.equal(seen?.headers['x-client-cert-san'], undefined);
    assert.equal((await call(gw, '/v1/orders/1', bearer, pki.client, spoofed)).status, 200);
    seen = gw.upstream.received.at(-1);
    assert.equal(seen?.headers['x-client-cert-subject'], 'CN=client');
    assert.equal(seen?.headers['x-client-cert-thumbprint'], thumbprint(pki.client));
  });

  test('a trusted external issuer’s bound token is held to its certificate the same way', async (t) => {
    const gw = await gateway(t);
    const now = Math.floor(Date.now() / 1000);
    const external = (claims: Record<string, unknown>) =>
      new SignJWT({ client_id: 'partner', scope: 'orders:read', ...claims })
        .setProtectedHeader({ alg: 'ES256', kid: 'idp-1', typ: 'at+jwt' })
        .setIssuer(IDP)
        .setSubject('partner')
        .setAudience('partner-api')
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .setJti(`ext-${Math.random()}`)
        .sign(idpKey.privateKey);
    const bound = await external({ cnf: { 'x5t#S256': thumbprint(pki.client) } });
    assert.equal((await call(gw, '/v1/orders/1', bound, pki.client)).status, 200);
    assert.equal(
      (await call(gw, '/v1/orders/1', bound, otherPartner)).code,
      'token-binding-failed',
    );
    assert.equal((await call(gw, '/v1/orders/1', bound, null)).code, 'token-binding-failed');
    assert.equal((await call(gw, '/v1/bound/1', bound, pki.client)).status, 200);
    const bearer = await external({});
    assert.equal((await call(gw, '/v1/orders/1', bearer, null)).status, 200);
    assert.equal(
      (await call(gw, '/v1/bound/1', bearer, pki.client)).code,
      'token-binding-required',
    );
  });
});
