import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import { ManualClock } from '../../src/lib/clock.js';
import { type Gateway, problemOf, startGateway } from '../helpers/fixture.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { rawRequest, statusOf } from '../helpers/rawHttp.js';
import {
  hmacWithPublicKey,
  signRawWithGatewayKey,
  signWith,
  signWithGatewayKey,
  unsecuredToken,
  validClaims,
} from '../helpers/tokens.js';
import { accessLineOf } from '../helpers/wait.js';

function call(gw: Gateway, token: string | null, path = '/v1/orders/1') {
  return fetch(
    gw.url + path,
    token === null ? {} : { headers: { authorization: `Bearer ${token}` } },
  );
}

async function expectRefused(res: Response, tipo: string, wwwAuthenticate: string) {
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('www-authenticate'), wwwAuthenticate);
  const problem = await problemOf(res);
  assert.equal(problem.tipo, `urn:portaria:problem:${tipo}`);
  assert.equal(problem.status, 401);
  return problem;
}
/** The gateway's protected-resource metadata (RFC 9728 §5.1): every route here is the default. */
const METADATA = 'resource_metadata="https://portaria.test/.well-known/oauth-protected-resource"';
const INVALID = `Bearer realm="portaria", error="invalid_token", ${METADATA}`;
const MISSING = `Bearer realm="portaria", ${METADATA}`;

describe('bearer verification at the edge', () => {
  test('a valid token is forwarded with the identity headers set from it', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    const res = await call(gw, token);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-upstream'), 'yes');
    const seen = gw.upstream.received[0];
    assert.ok(seen);
    assert.equal(seen.headers['x-client-id'], 'acme');
    assert.equal(seen.headers['x-token-scope'], 'orders:read orders:write');
    assert.equal(seen.headers['x-token-jti'], decodeJwt(token).jti);
    assert.equal(seen.headers.authorization, `Bearer ${token}`);
  });

  test('no Authorization header → 401 token-missing without an error code', async (t) => {
    const gw = await startGateway(t);
    await expectRefused(await call(gw, null), 'token-missing', MISSING);
    assert.equal(gw.upstream.received.length, 0);
  });

  test('another scheme → 401 token-missing', async (t) => {
    const gw = await startGateway(t);
    const res = await fetch(`${gw.url}/v1/orders`, {
      headers: { authorization: 'Basic YWNtZTpzZWNyZXQ=' },
    });
    await expectRefused(res, 'token-missing', MISSING);
  });

  test('the scheme name is case-insensitive', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    const res = await fetch(`${gw.url}/v1/orders`, {
      headers: { authorization: `bEaReR ${token}` },
    });
    assert.equal(res.status, 200);
  });

  const malformed: [string, string][] = [
    ['an empty Bearer value', 'Bearer '],
    ['Bearer alone', 'Bearer'],
    ['two tokens in one header', 'Bearer a.b.c d.e.f'],
    ['a token that is not a JWS', 'Bearer not-a-jwt'],
    ['a JWE-shaped token (five parts)', 'Bearer a.b.c.d.e'],
    ['a token with illegal characters', 'Bearer a.b.c$'],
  ];
  for (const [name, value] of malformed) {
    test(`${name} → 401 token-invalid`, async (t) => {
      const gw = await startGateway(t);
      const res = await fetch(`${gw.url}/v1/orders`, { headers: { authorization: value } });
      await expectRefused(res, 'token-invalid', INVALID);
    });
  }

  test('two Authorization headers → 401 even when both are valid', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    const raw = await rawRequest(
      gw.url,
      `GET /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nauthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
    );
    assert.equal(statusOf(raw), 401);
    assert.match(raw, /token-invalid/);
    assert.equal(gw.upstream.received.length, 0);
  });

  test('a token in the query string → 401, even alongside a valid header', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    await expectRefused(
      await call(gw, null, `/v1/orders?access_token=${token}`),
      'token-invalid',
      INVALID,
    );
    await expectRefused(
      await call(gw, token, `/v1/orders?x=1&access_token=${token}`),
      'token-invalid',
      INVALID,
    );
    // Percent-encoded, the parameter name is still access_token to every query parser.
    // So are the spellings frameworks read as that name: any case, PHP's `.`/` `/`[` to
    // `_`, and `;` as a parameter separator.
    for (const query of [
      '%61ccess_token=',
      'access%5Ftoken=',
      '%61%63%63%65%73%73%5f%74%6f%6b%65%6e=',
      'Access_Token=',
      'access.token=',
      'access+token=',
      'access%20token=',
      'access[token=',
      'x=1;access_token=',
    ]) {
      await expectRefused(
        await call(gw, token, `/v1/orders?${query}${token}`),
        'token-invalid',
        INVALID,
      );
    }
    assert.equal(gw.upstream.received.length, 0);
  });

  test('query parameters merely resembling access_token are forwarded', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    for (const query of ['access=1', 'access_tokens=1', 'my_access_token=1', 'q=access_token']) {
      const res = await call(gw, token, `/v1/orders?${query}`);
      assert.equal(res.status, 200, query);
      await res.arrayBuffer();
    }
  });

  test('alg "none" → 401', async (t) => {
    const gw = await startGateway(t);
    await expectRefused(
      await call(gw, unsecuredToken({ kid: gw.keyRing.signingKey.kid }, validClaims(gw))),
      'token-invalid',
      INVALID,
    );
  });

  test('HS256 signed with the public key (algorithm confusion) → 401', async (t) => {
    const gw = await startGateway(t);
    await expectRefused(
      await call(gw, hmacWithPublicKey(gw, validClaims(gw))),
      'token-invalid',
      INVALID,
    );
  });

  test('a tampered payload → 401', async (t) => {
    const gw = await startGateway(t);
    const [h, , s] = (await gw.token('reader', 'reader-secret-0123456789abcdefghijklmnopq')).split(
      '.',
    );
    const claims = { ...validClaims(gw), sub: 'acme', scope: 'orders:read orders:write admin' };
    const tampered = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
    await expectRefused(await call(gw, tampered), 'token-invalid', INVALID);
  });

  test("a cached token's signature on another payload → 401, and the token still works", async (t) => {
    // The cache finds entries by the token's end (its signature): a tampered token ending
    // like a cached one must go through full verification, not be served the cached
    // principal, and must not displace the real token's entry.
    const gw = await startGateway(t);
    const token = await gw.token('reader', 'reader-secret-0123456789abcdefghijklmnopq');
    assert.equal((await call(gw, token)).status, 200);
    const [h, , s] = token.split('.');
    const claims = { ...validClaims(gw), sub: 'acme', scope: 'orders:read orders:write admin' };
    const tampered = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
    await expectRefused(await call(gw, tampered), 'token-invalid', INVALID);
    assert.equal((await call(gw, token)).status, 200);
    assert.equal(gw.upstream.received.length, 2, 'only the real token reached the upstream');
    assert.equal(gw.upstream.received[1]?.headers['x-client-id'], 'reader');
  });

  test('failures before the signature is proven share one detail: no probing which issuers are trusted', async (t) => {
    // A trusted partner that signs with RS256 only: an ES256 token naming it must not be
    // told apart from one naming an unknown issuer.
    const gw = await startGateway(t, {
      settings: () => ({
        issuers: [
          {
            id: 'partner',
            issuer: 'https://idp.partner.example',
            audiences: ['partner-api'],
            jwksUri: 'http://127.0.0.1:9/jwks',
            algorithms: ['RS256'],
          },
        ],
      }),
    });
    const [h, , s] = (await gw.token()).split('.');
    const forged = (claims: Record<string, unknown>) =>
      `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
    const details = new Set<unknown>();
    for (const token of [
      forged(validClaims(gw)), // bad signature, trusted issuer
      forged(validClaims(gw, { iss: 'https://idp.probe.example' })), // unknown issuer
      forged(validClaims(gw, { iss: 'https://idp.partner.example' })), // trusted, not ES256
      await signWithGatewayKey(gw, validClaims(gw), { kid: 'no-such-kid' }),
    ]) {
      const res = await call(gw, token);
      assert.equal(res.status, 401);
      details.add((await problemOf(res)).detalhe);
    }
    assert.deepEqual([...details], ['The access token signature could not be verified.']);
  });

  test('a truncated signature → 401', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    await expectRefused(await call(gw, token.slice(0, -10)), 'token-invalid', INVALID);
  });

  test('a token signed by a key we do not hold, under our kid or another → 401', async (t) => {
    const gw = await startGateway(t);
    const { privateKey } = newKeyPair('ec', { namedCurve: 'P-256' });
    const ours = await signWith(privateKey, 'ES256', validClaims(gw), {
      kid: gw.keyRing.signingKey.kid,
    });
    await expectRefused(await call(gw, ours), 'token-invalid', INVALID);
    const unknown = await signWith(privateKey, 'ES256', validClaims(gw), { kid: 'attacker-key' });
    await expectRefused(await call(gw, unknown), 'token-invalid', INVALID);
  });

  test('attacker jwk, jku, x5u and x5c headers are never used or fetched', async (t) => {
    const gw = await startGateway(t);
    let hits = 0;
    const trap = createServer((_req, res) => {
      hits++;
      res.end('{}');
    });
    await new Promise<void>((r) => trap.listen(0, '127.0.0.1', r));
    t.after(() => new Promise<void>((r) => trap.close(() => r())));
    const trapUrl = `http://127.0.0.1:${(trap.address() as { port: number }).port}/keys`;
    const { privateKey, publicKey } = newKeyPair('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    for (const header of [
      { jwk, kid: 'attacker' },
      { jku: trapUrl, kid: 'attacker' },
      { x5u: trapUrl, kid: 'attacker' },
      { x5c: ['MIIB'], kid: 'attacker' },
      { jwk, jku: trapUrl, kid: gw.keyRing.signingKey.kid },
    ]) {
      const token = await signWith(privateKey, 'ES256', validClaims(gw), header);
      await expectRefused(await call(gw, token), 'token-invalid', INVALID);
    }
    assert.equal(hits, 0);
  });

  test('an unknown crit header parameter → 401', async (t) => {
    const gw = await startGateway(t);
    const token = signRawWithGatewayKey(gw, validClaims(gw), { crit: ['exp-hint'], 'exp-hint': 1 });
    await expectRefused(await call(gw, token), 'token-invalid', INVALID);
  });

  const claimCases: [string, Record<string, unknown>, Record<string, unknown>, string][] = [
    ['a wrong typ (plain JWT)', {}, { typ: 'JWT' }, 'token-invalid'],
    ['a missing typ', {}, { typ: undefined }, 'token-invalid'],
    [
      'an expired token',
      { exp: Math.floor(Date.now() / 1000) - 3600, iat: Math.floor(Date.now() / 1000) - 7200 },
      {},
      'token-expired',
    ],
    ['nbf in the future', { nbf: Math.floor(Date.now() / 1000) + 3600 }, {}, 'token-invalid'],
    ['iat in the future', { iat: Math.floor(Date.now() / 1000) + 3600 }, {}, 'token-invalid'],
    ['a wrong issuer', { iss: 'https://evil.test' }, {}, 'token-invalid'],
    ['a wrong audience', { aud: 'other-api' }, {}, 'token-invalid'],
    ['no jti', { jti: undefined }, {}, 'token-invalid'],
    ['no exp', { exp: undefined }, {}, 'token-invalid'],
    ['a non-string scope', { scope: ['orders:read'] }, {}, 'token-invalid'],
    // Ids no revocation could name: such a token could never be revoked.
    ['a jti over 512 characters', { jti: 'j'.repeat(513) }, {}, 'token-invalid'],
    ['a jti with a control character', { jti: 'a\u0000b' }, {}, 'token-invalid'],
    ['a client_id over 256 characters', { client_id: 'c'.repeat(257) }, {}, 'token-invalid'],
    ['a jti with a lone surrogate', { jti: 'j\ud800' }, {}, 'token-invalid'],
    [
      'a client_id of 86 CJK characters (258 bytes)',
      { client_id: '客'.repeat(86) },
      {},
      'token-invalid',
    ],
    ['a client_id with a C1 control', { client_id: 'acme\u0085' }, {}, 'token-invalid'],
    ['a client_id with a lone surrogate', { client_id: 'acme\ud83d' }, {}, 'token-invalid'],
    [
      'no client_id and a sub that is no client id',
      { client_id: undefined, sub: 'a\nb' },
      {},
      'token-invalid',
    ],
    ['a sub with a lone surrogate', { sub: 'acme\udc00' }, {}, 'token-invalid'],
    [
      'a lifetime over 24 h (exp − iat), signed with our own key',
      { iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 86_401 },
      {},
      'token-invalid',
    ],
  ];
  for (const [name, claims, header, tipo] of claimCases) {
    test(`${name} → 401 ${tipo}`, async (t) => {
      const gw = await startGateway(t);
      const token = await signWithGatewayKey(gw, validClaims(gw, claims), header);
      await expectRefused(await call(gw, token), tipo, INVALID);
    });
  }

  test('ids at the revocable limits are accepted', async (t) => {
    const gw = await startGateway(t);
    const token = await signWithGatewayKey(gw, validClaims(gw, { jti: 'j'.repeat(512) }));
    assert.equal((await call(gw, token)).status, 200);
    for (const clientId of ['🚀'.repeat(64), `${'客'.repeat(85)}x`, 'c'.repeat(256)]) {
      const unicode = await signWithGatewayKey(gw, validClaims(gw, { client_id: clientId }));
      assert.equal((await call(gw, unicode)).status, 200, clientId);
    }
  });

  test('a sub with control characters beside a valid client_id reaches the upstream encoded', async (t) => {
    const gw = await startGateway(t);
    const token = await signWithGatewayKey(gw, validClaims(gw, { sub: 'user\r\n1 ' }));
    assert.equal((await call(gw, token)).status, 200);
    const seen = gw.upstream.received.at(-1)?.headers['x-client-id'];
    assert.equal(seen, 'user%0D%0A1%20');
    assert.equal(decodeURIComponent(seen as string), 'user\r\n1 ');
  });

  test('time claims within the configured skew are accepted', async (t) => {
    const gw = await startGateway(t);
    const now = Math.floor(Date.now() / 1000);
    const token = await signWithGatewayKey(
      gw,
      validClaims(gw, { nbf: now + 30, iat: now + 30, exp: now - 30 + 600 }),
    );
    assert.equal((await call(gw, token)).status, 200);
    const expiredWithinSkew = await signWithGatewayKey(gw, validClaims(gw, { exp: now - 30 }));
    assert.equal((await call(gw, expiredWithinSkew)).status, 200);
  });

  test('a 100 KB token is refused without a crash', async (t) => {
    const gw = await startGateway(t);
    const huge = `${'a'.repeat(50_000)}.${'b'.repeat(50_000)}.c`;
    const res = await fetch(`${gw.url}/v1/orders`, {
      headers: { authorization: `Bearer ${huge}` },
    });
    assert.equal(res.status, 431);
    assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:headers-too-large');
    // And the gateway still serves.
    assert.equal((await call(gw, await gw.token())).status, 200);
  });

  test('a token over 8 KiB is refused before parsing when the header limit allows it', async (t) => {
    const gw = await startGateway(t, {
      settings: () => ({ server: { host: '127.0.0.1', port: 0, maxHeaderBytes: 65536 } }),
    });
    const big = `${'a'.repeat(5000)}.${'b'.repeat(5000)}.c`;
    await expectRefused(await call(gw, big), 'token-invalid', INVALID);
  });

  test('a revoked token is refused on the next request even though it is cached', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    assert.equal((await call(gw, token)).status, 200);
    assert.equal((await call(gw, token)).status, 200);
    await gw.app.revoke(decodeJwt(token).jti as string);
    await expectRefused(await call(gw, token), 'token-revoked', INVALID);
    const other = await gw.token();
    assert.equal((await call(gw, other)).status, 200);
  });

  test('a cached token stops working when it expires (fake clock, no sleeping)', async (t) => {
    const clock = new ManualClock(Date.now());
    const gw = await startGateway(t, {
      clock,
      clients: [
        {
          id: 'acme',
          secret: 'acme-secret-0123456789abcdefghijklmnopqrstu',
          scopes: ['a'],
          lifetimeSeconds: 300,
        },
      ],
    });
    const token = await gw.token();
    assert.equal((await call(gw, token)).status, 200);
    clock.advance(299_000);
    assert.equal((await call(gw, token)).status, 200);
    clock.advance(2_000 + 60_000); // past exp + skew
    await expectRefused(await call(gw, token), 'token-expired', INVALID);
  });

  test('a missing route scope → 403 insufficient_scope', async (t) => {
    const gw = await startGateway(t, {
      settings: (u) => ({
        routes: [{ id: 'reports', prefix: '/v1/reports', upstream: u, scopes: ['reports:read'] }],
      }),
    });
    const res = await call(gw, await gw.token(), '/v1/reports/2026');
    assert.equal(res.status, 403);
    assert.equal(
      res.headers.get('www-authenticate'),
      'Bearer realm="portaria", error="insufficient_scope", scope="reports:read", ' +
        'resource_metadata="https://portaria.test/.well-known/oauth-protected-resource/v1/reports"',
    );
    assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:insufficient-scope');
    assert.equal(gw.upstream.received.length, 0);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    // Logged and counted under the route it was refused for, not as unmatched.
    const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') as string);
    assert.equal(line['http.route'], 'reports');
    assert.equal(line['http.response.status_code'], 403);
  });

  test('no route and no default upstream → 404 after authentication, 401 before', async (t) => {
    const gw = await startGateway(t, { settings: () => ({ upstream: { default: null } }) });
    assert.equal((await call(gw, null, '/nowhere')).status, 401);
    const res = await call(gw, await gw.token(), '/nowhere');
    assert.equal(res.status, 404);
    assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:not-found');
  });

  test('auth failures are counted by reason in the metrics', async (t) => {
    const gw = await startGateway(t);
    await call(gw, null);
    await call(gw, unsecuredToken({}, validClaims(gw)));
    await call(gw, hmacWithPublicKey(gw, validClaims(gw)));
    const text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
    assert.match(text, /portaria_auth_failures_total\{reason="no-authorization"\} 1/);
    assert.match(text, /portaria_auth_failures_total\{reason="malformed"\} 1/);
    assert.match(text, /portaria_auth_failures_total\{reason="alg-not-allowed"\} 1/);
  });

  test('a malformed token is refused without a cache lookup; a valid one is a miss, then a hit', async (t) => {
    const gw = await startGateway(t);
    const lookups = async () => {
      const text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
      const count = (result: string) =>
        Number(
          new RegExp(`portaria_verify_cache_lookups_total\\{result="${result}"\\} (\\d+)`).exec(
            text,
          )?.[1] ?? 0,
        );
      return { hit: count('hit'), miss: count('miss') };
    };
    const malformed = await fetch(`${gw.url}/v1/orders`, {
      headers: { authorization: 'Bearer not-a-jwt' },
    });
    await expectRefused(malformed, 'token-invalid', INVALID);
    assert.deepEqual(await lookups(), { hit: 0, miss: 0 });
    const token = await gw.token();
    assert.equal((await call(gw, token)).status, 200);
    assert.equal((await call(gw, token)).status, 200);
    assert.deepEqual(await lookups(), { hit: 1, miss: 1 });
  });
});
