/**
 * DPoP (RFC 9449) with a trusted external issuer's tokens: the issuer (a real loopback
 * JWKS server, its own key) binds a token to a client's key (`cnf.jkt`, §6.1) and the
 * client makes its proofs by hand with jose. With `dpop.enabled` the edge enforces the
 * binding as for our own tokens — the right proof passes; the token as Bearer, a proof by
 * another key, a replayed proof and a proof for another URL are refused. With DPoP off,
 * nothing can check a proof, so the bound token is refused outright, Bearer or not.
 */
import assert from 'node:assert/strict';
import { createHash, type KeyObject, randomUUID } from 'node:crypto';
import { describe, type TestContext, test } from 'node:test';
import { calculateJwkThumbprint, exportJWK, type JWK, SignJWT } from 'jose';
import { type Gateway, problemOf, startGateway } from '../helpers/fixture.js';
import { ecKey, jwksOf, serve, startJwksServer, type TestKey } from '../helpers/jwksServer.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { waitForStatus } from '../helpers/process.js';
import { signWith } from '../helpers/tokens.js';
import { accessLineOf } from '../helpers/wait.js';

const PARTNER_ISS = 'https://idp.partner.test';
const AUDIENCE = 'partner-api';
const ORDERS = '/v1/orders/1';

/** A client's DPoP key: the private key it signs with, its public JWK and thumbprint. */
interface ProofKey {
  readonly alg: 'ES256' | 'EdDSA';
  readonly privateKey: KeyObject;
  readonly jwk: JWK;
  readonly jkt: string;
}

async function proofKey(alg: ProofKey['alg']): Promise<ProofKey> {
  const pair = alg === 'ES256' ? newKeyPair('ec', { namedCurve: 'P-256' }) : newKeyPair('ed25519');
  const jwk = await exportJWK(pair.publicKey);
  return { alg, privateKey: pair.privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

/** A proof for `method` `url` naming `token` (§4.2: typ, jwk, htm, htu, iat, jti, ath). */
function proofOf(key: ProofKey, method: string, url: string, token: string): Promise<string> {
  return new SignJWT({
    htm: method,
    htu: url,
    jti: randomUUID(),
    ath: createHash('sha256').update(token).digest('base64url'),
  })
    .setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.jwk })
    .setIssuedAt()
    .sign(key.privateKey);
}

interface Setup {
  gw: Gateway;
  issuerKey: TestKey;
}

async function setup(t: TestContext, dpop: boolean): Promise<Setup> {
  const issuerKey = ecKey('partner-2026-1');
  const jwks = await startJwksServer(t, serve(jwksOf(issuerKey)));
  const gw = await startGateway(t, {
    settings: (upstream) => ({
      dpop: { enabled: dpop },
      issuers: [
        {
          id: 'partner',
          issuer: PARTNER_ISS,
          jwksUri: jwks.url,
          audiences: [AUDIENCE],
          algorithms: ['ES256'],
        },
      ],
      upstream: { default: null },
      routes: [{ id: 'orders', prefix: '/v1/orders', upstream, scopes: ['orders:read'] }],
    }),
  });
  // Ready once the issuer's key set is loaded.
  await waitForStatus(`${gw.adminUrl}/readyz`, 200, 3000);
  return { gw, issuerKey };
}

/** The partner's access token, bound to `jkt` when given. */
function partnerToken(s: Setup, jkt?: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return signWith(
    s.issuerKey.privateKey,
    'ES256',
    {
      iss: PARTNER_ISS,
      sub: 'partner-app',
      client_id: 'partner-app',
      aud: AUDIENCE,
      iat: now,
      exp: now + 600,
      jti: randomUUID(),
      scope: 'orders:read',
      ...(jkt === undefined ? {} : { cnf: { jkt } }),
    },
    { kid: s.issuerKey.kid },
  );
}

function call(s: Setup, authorization: string, proof?: string, path = ORDERS): Promise<Response> {
  return fetch(s.gw.url + path, {
    headers: { authorization, ...(proof === undefined ? {} : { dpop: proof }) },
  });
}

interface Refusal {
  readonly challenge: string;
  readonly tipo: string;
  readonly reason: string;
}

/** A 401 with exactly this challenge, problem and access-line reason. */
async function assertRefused(s: Setup, res: Response, expected: Refusal): Promise<void> {
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('www-authenticate'), expected.challenge);
  const problem = await problemOf(res);
  assert.equal(problem.tipo, `urn:portaria:problem:${expected.tipo}`);
  assert.equal(problem.status, 401);
  const line = await accessLineOf(s.gw.logs, res.headers.get('x-request-id') as string);
  assert.equal(line['portaria.reason'], expected.reason);
}

const RESOURCE_METADATA =
  'resource_metadata="https://portaria.test/.well-known/oauth-protected-resource/v1/orders"';
const BEARER_INVALID = `Bearer realm="portaria", error="invalid_token", ${RESOURCE_METADATA}`;
const DPOP_INVALID_PROOF = 'DPoP algs="ES256 ES384 EdDSA PS256 RS256", error="invalid_dpop_proof"';

describe('DPoP with a trusted external issuer, dpop.enabled', () => {
  test('its bound token passes with a proof of the key it names, and reaches the upstream', async (t) => {
    const s = await setup(t, true);
    const key = await proofKey('EdDSA');
    const token = await partnerToken(s, key.jkt);
    // htu is the URI without its query (RFC 9449 §4.3 item 10).
    for (const [path, htu] of [
      ['/v1/orders/1', '/v1/orders/1'],
      ['/v1/orders/2?page=3', '/v1/orders/2'],
    ] as const) {
      const proof = await proofOf(key, 'GET', s.gw.url + htu, token);
      const res = await call(s, `DPoP ${token}`, proof, path);
      assert.equal(res.status, 200, path);
      assert.deepEqual(await res.json(), { path, method: 'GET' });
    }
    const received = s.gw.upstream.received;
    assert.deepEqual(
      received.map((r) => r.url),
      ['/v1/orders/1', '/v1/orders/2?page=3'],
    );
    assert.equal(received[0]?.headers['x-client-id'], 'partner-app');
  });

  test('its bound token is refused as Bearer', async (t) => {
    const s = await setup(t, true);
    const key = await proofKey('ES256');
    const token = await partnerToken(s, key.jkt);
    await assertRefused(s, await call(s, `Bearer ${token}`), {
      challenge: BEARER_INVALID,
      tipo: 'token-invalid',
      reason: 'dpop-as-bearer',
    });
    // The same, with the holder's valid proof beside it: the scheme decides, §7.1.
    const proof = await proofOf(key, 'GET', s.gw.url + ORDERS, token);
    await assertRefused(s, await call(s, `Bearer ${token}`, proof), {
      challenge: BEARER_INVALID,
      tipo: 'token-invalid',
      reason: 'dpop-as-bearer',
    });
    assert.equal(s.gw.upstream.received.length, 0);
  });

  test('a proof by another key, a replayed proof and a proof for another URL are refused', async (t) => {
    const s = await setup(t, true);
    const key = await proofKey('ES256');
    const token = await partnerToken(s, key.jkt);
    const url = s.gw.url + ORDERS;
    const proof = await proofOf(key, 'GET', url, token);
    const first = await call(s, `DPoP ${token}`, proof);
    assert.equal(first.status, 200);
    await first.arrayBuffer();

    const refused = (reason: string): Refusal => ({
      challenge: DPOP_INVALID_PROOF,
      tipo: 'dpop-proof-invalid',
      reason,
    });
    // A thief holding the token signs a valid proof with a key of its own.
    const thief = await proofKey('ES256');
    const stolen = await call(s, `DPoP ${token}`, await proofOf(thief, 'GET', url, token));
    await assertRefused(s, stolen, refused('dpop-key-mismatch'));
    // The holder's proof, sent again: single use, §11.1.
    await assertRefused(s, await call(s, `DPoP ${token}`, proof), refused('dpop-replayed'));
    // A fresh proof of the right key, made for another URL.
    const elsewhere = await proofOf(key, 'GET', `${s.gw.url}/v1/orders/2`, token);
    await assertRefused(s, await call(s, `DPoP ${token}`, elsewhere), refused('dpop-htu'));
    // A fresh proof of the right key, made for another access token.
    const other = await proofOf(key, 'GET', url, await partnerToken(s, key.jkt));
    await assertRefused(s, await call(s, `DPoP ${token}`, other), refused('dpop-ath'));
    assert.equal(s.gw.upstream.received.length, 1);
  });
});

describe('DPoP with a trusted external issuer, dpop.enabled false', () => {
  test('its bound token is refused even as Bearer; its unbound tokens pass', async (t) => {
    const s = await setup(t, false);
    const key = await proofKey('ES256');
    const token = await partnerToken(s, key.jkt);
    await assertRefused(s, await call(s, `Bearer ${token}`), {
      challenge: BEARER_INVALID,
      tipo: 'token-invalid',
      reason: 'dpop-as-bearer',
    });
    // Without DPoP the scheme is not one the gateway takes: no credentials came (RFC 6750 §3.1).
    const proof = await proofOf(key, 'GET', s.gw.url + ORDERS, token);
    const asDpop = await call(s, `DPoP ${token}`, proof);
    assert.equal(asDpop.status, 401);
    assert.equal(
      asDpop.headers.get('www-authenticate'),
      `Bearer realm="portaria", ${RESOURCE_METADATA}`,
    );
    assert.equal((await problemOf(asDpop)).tipo, 'urn:portaria:problem:token-missing');
    assert.equal(s.gw.upstream.received.length, 0);

    // The issuer's unbound tokens are accepted: the refusal is the binding's.
    const unbound = await call(s, `Bearer ${await partnerToken(s)}`);
    assert.equal(unbound.status, 200);
    await unbound.arrayBuffer();
    assert.equal(s.gw.upstream.received.length, 1);
  });
});
