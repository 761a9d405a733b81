/**
 * A gateway whose token.algorithm is PS256, as a partner and a third-party verifier see
 * it: its tokens are PS256 (RSASSA-PSS, SHA-256, MGF1-SHA-256, a 32-octet salt, RFC 7518
 * §3.5) that jose verifies with the JWKS the gateway serves, and the gateway refuses
 * every other spelling of a signature by its own key: PKCS#1 v1.5 under a PS256 label,
 * another salt length, another algorithm under the key's kid.
 */
import assert from 'node:assert/strict';
import { constants, type KeyObject, sign } from 'node:crypto';
import { describe, type TestContext, test } from 'node:test';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { plainRsaPrivateKey } from '../../src/keys/rsaPssKey.js';
import { type Gateway, problemOf, startGateway } from '../helpers/fixture.js';
import { validClaims } from '../helpers/tokens.js';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function start(t: TestContext): Promise<Gateway> {
  return startGateway(t, { algorithm: 'PS256' });
}

function call(gw: Gateway, token: string): Promise<Response> {
  return fetch(`${gw.url}/v1/orders/1`, { headers: { authorization: `Bearer ${token}` } });
}

/** A token with the gateway key's kid and valid claims, signed by `signer` over its input. */
function forged(gw: Gateway, alg: string, signer: (input: Buffer) => Buffer): string {
  const header = { alg, kid: gw.keyRing.signingKey.kid, typ: 'at+jwt' };
  const input = `${b64(header)}.${b64(validClaims(gw))}`;
  return `${input}.${signer(Buffer.from(input)).toString('base64url')}`;
}

/** The gateway's key as a plain RSA key, which OpenSSL lets sign with any padding. */
function rsaKeyOf(gw: Gateway): KeyObject {
  return plainRsaPrivateKey(gw.keyRing.signingKey.privateKey);
}

function pss(key: KeyObject, saltLength?: number) {
  const options = { key, padding: constants.RSA_PKCS1_PSS_PADDING };
  return (input: Buffer) =>
    sign('sha256', input, saltLength === undefined ? options : { ...options, saltLength });
}

describe('a PS256 gateway', () => {
  test('issues PS256 tokens that jose verifies with the JWKS the gateway serves', async (t) => {
    const gw = await start(t);
    const token = await gw.token();
    assert.deepEqual(decodeProtectedHeader(token), {
      alg: 'PS256',
      kid: gw.keyRing.signingKey.kid,
      typ: 'at+jwt',
    });
    const jwksUrl = new URL(`${gw.url}/.well-known/jwks.json`);
    const jwks = (await (await fetch(jwksUrl)).json()) as { keys: Record<string, string>[] };
    assert.deepEqual(
      jwks.keys.map((k) => Object.keys(k).sort()),
      [['alg', 'e', 'kid', 'kty', 'n', 'use']],
    );
    assert.deepEqual(
      jwks.keys.map(({ kty, alg, use, kid }) => ({ kty, alg, use, kid })),
      [{ kty: 'RSA', alg: 'PS256', use: 'sig', kid: gw.keyRing.signingKey.kid }],
    );
    // RSA 3072: `keys generate --alg PS256`, as the fixture made the key.
    assert.equal(Buffer.from(jwks.keys[0]?.n ?? '', 'base64url').length, 384);
    const { payload } = await jwtVerify(token, createRemoteJWKSet(jwksUrl), {
      algorithms: ['PS256'],
      issuer: gw.config.issuer,
      audience: gw.config.audience,
      typ: 'at+jwt',
    });
    assert.equal(payload.client_id, 'acme');
    const res = await call(gw, token);
    assert.equal(res.status, 200);
    assert.equal(gw.upstream.received[0]?.headers['x-client-id'], 'acme');
  });

  test('accepts a PS256 signature by its key with a 32-octet salt (the control for the refusals below)', async (t) => {
    const gw = await start(t);
    const res = await call(gw, forged(gw, 'PS256', pss(rsaKeyOf(gw), 32)));
    assert.equal(res.status, 200);
  });

  const refusals: [string, string, (key: KeyObject) => (input: Buffer) => Buffer][] = [
    [
      'PKCS#1 v1.5 padding labelled PS256 (an RS256 signature)',
      'PS256',
      (key) => (input) => sign('sha256', input, key),
    ],
    ["Node's default PSS salt, the longest that fits", 'PS256', (key) => pss(key)],
    ['a 20-octet salt', 'PS256', (key) => pss(key, 20)],
    ['no salt', 'PS256', (key) => pss(key, 0)],
    ['RS256 under the PS256 key', 'RS256', (key) => (input) => sign('sha256', input, key)],
  ];
  for (const [name, alg, signer] of refusals) {
    test(`refuses ${name} with 401 invalid_token`, async (t) => {
      const gw = await start(t);
      const res = await call(gw, forged(gw, alg, signer(rsaKeyOf(gw))));
      assert.equal(res.status, 401);
      assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
      assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:token-invalid');
      assert.equal(gw.upstream.received.length, 0);
      const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
      const reason = alg === 'PS256' ? 'bad-signature' : 'alg-mismatch';
      assert.match(metrics, new RegExp(`portaria_auth_failures_total\\{reason="${reason}"\\} 1`));
    });
  }
});
