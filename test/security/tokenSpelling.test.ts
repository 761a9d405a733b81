/**
 * One token, one spelling: a compliant JWS encoder (RFC 7515 §2: base64url without
 * padding, RFC 4648 §3.5: unused bits zero) writes each token one way, and anything keyed
 * on the token text (the verified-token cache, an upstream's cache, a deny list) must not
 * see one token as several. Every other spelling is refused before any cryptography,
 * for every algorithm a trusted issuer may use. The one spelling left by design, the
 * ECDSA (r, n − s) twin, is shown to cost a second verification and gain nothing else.
 */
import assert from 'node:assert/strict';
import { constants, createPublicKey, type KeyObject, randomUUID, sign } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { decodeJwt } from 'jose';
import { type Gateway, problemOf, startGateway } from '../helpers/fixture.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { sample, scrape } from '../helpers/metrics.js';
import { signWith, validClaims } from '../helpers/tokens.js';
import { accessLineOf } from '../helpers/wait.js';

const INVALID =
  'Bearer realm="portaria", error="invalid_token", ' +
  'resource_metadata="https://portaria.test/.well-known/oauth-protected-resource"';
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const PARTNER_ISS = 'https://idp.partner.test';
const AUDIENCE = 'partner-api';

async function call(gw: Gateway, token: string): Promise<{ status: number; reason: unknown }> {
  const res = await fetch(`${gw.url}/v1/orders`, { headers: { authorization: `Bearer ${token}` } });
  if (res.status === 200) {
    await res.arrayBuffer();
    return { status: 200, reason: undefined };
  }
  assert.equal(res.headers.get('www-authenticate'), INVALID);
  const problem = await problemOf(res);
  const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') as string);
  return {
    status: res.status,
    reason: `${String(problem.tipo).replace('urn:portaria:problem:', '')}/${line['portaria.reason']}`,
  };
}

/** Every spelling of `text`'s last character that differs only in its unused bits (RFC 4648 §3.5). */
function unusedBitSpellings(text: string): string[] {
  const unused = text.length % 4 === 2 ? 4 : text.length % 4 === 3 ? 2 : 0;
  const value = ALPHABET.indexOf(text.at(-1) as string);
  const spellings: string[] = [];
  for (let bits = 1; bits < 1 << unused; bits++) {
    spellings.push(text.slice(0, -1) + ALPHABET[value ^ bits]);
  }
  return spellings;
}

/** The token with segment `index` replaced. */
function withSegment(token: string, index: number, segment: string): string {
  const parts = token.split('.');
  parts[index] = segment;
  return parts.join('.');
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * `value` with a `pad` member long enough that its base64url has unused bits (length
 * ≡ 2 mod 4), so a non-canonical spelling of its last character exists.
 */
function withUnusedBits(value: Record<string, unknown>): string {
  for (let n = 0; ; n++) {
    const text = b64({ ...value, pad: 'x'.repeat(n) });
    if (text.length % 4 === 2) return text;
  }
}

/** ES256 over exactly the segments given (their text is what is signed, RFC 7515 §5.1). */
function es256Over(key: KeyObject, header: string, payload: string): string {
  const input = `${header}.${payload}`;
  const signature = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

describe('one token, one spelling', () => {
  test('of the 16 spellings of an ES256 signature’s last character only the canonical one is accepted', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    const signature = token.split('.')[2] as string;
    assert.equal(signature.length, 86, '64 bytes: the last character carries 4 unused bits');
    assert.deepEqual(await call(gw, token), { status: 200, reason: undefined });
    const spellings = unusedBitSpellings(signature);
    assert.equal(spellings.length, 15);
    for (const spelling of spellings) {
      assert.deepEqual(
        await call(gw, withSegment(token, 2, spelling)),
        { status: 401, reason: 'token-invalid/non-canonical' },
        spelling.slice(-4),
      );
    }
    assert.equal(gw.upstream.received.length, 1, 'only the canonical spelling was forwarded');
  });

  test('a header or payload with non-zero unused bits is refused even when signed as sent', async (t) => {
    const gw = await startGateway(t);
    const key = gw.keyRing.signingKey;
    const header = withUnusedBits({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' });
    const payload = withUnusedBits(validClaims(gw));
    assert.equal(
      (await call(gw, es256Over(key.privateKey, header, payload))).status,
      200,
      'canonical',
    );
    for (const [name, h, p] of [
      ['header', unusedBitSpellings(header)[0], payload],
      ['payload', header, unusedBitSpellings(payload)[7]],
    ] as const) {
      assert.deepEqual(
        await call(gw, es256Over(key.privateKey, h as string, p as string)),
        { status: 401, reason: 'token-invalid/non-canonical' },
        name,
      );
    }
    assert.equal(gw.upstream.received.length, 1);
  });

  test('spellings no encoder produces are refused before any cryptography', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    const [h, p, s] = token.split('.') as [string, string, string];
    const cases: [string, string, string][] = [
      ['padding on the signature', `${h}.${p}.${s}==`, 'token-invalid/malformed'],
      ['padding on the payload', `${h}.${p}=.${s}`, 'token-invalid/malformed'],
      [
        'a character of the standard alphabet (+)',
        `${h}.${p}.+${s.slice(1)}`,
        'token-invalid/malformed',
      ],
      [
        'a character outside the alphabet',
        `${h}.${p}.${s.slice(0, -1)}!`,
        'token-invalid/malformed',
      ],
      [
        'a payload whose length is 1 mod 4 (no octet count encodes to it)',
        `${h}.${p}${p.length % 4 === 0 ? 'A' : 'AAAA'.slice((p.length % 4) - 1)}.${s}`,
        'token-invalid/non-canonical',
      ],
      [
        'a signature one byte short',
        `${h}.${p}.${Buffer.from(s, 'base64url').subarray(1).toString('base64url')}`,
        'token-invalid/non-canonical',
      ],
      [
        'a signature one byte long',
        `${h}.${p}.${Buffer.concat([Buffer.alloc(1), Buffer.from(s, 'base64url')]).toString('base64url')}`,
        'token-invalid/non-canonical',
      ],
      [
        'a 48-byte signature (canonical length for another size)',
        `${h}.${p}.${Buffer.from(s, 'base64url').subarray(16).toString('base64url')}`,
        'token-invalid/non-canonical',
      ],
    ];
    for (const [name, spelling, expected] of cases) {
      assert.deepEqual(await call(gw, spelling), { status: 401, reason: expected }, name);
    }
    assert.equal(gw.upstream.received.length, 0);
    const text = await scrape(gw.adminUrl);
    assert.equal(
      sample(text, 'portaria_auth_failures_total{reason="non-canonical"}'),
      4,
      'counted under its own reason',
    );
  });
});

describe('every algorithm a trusted issuer may use', () => {
  interface IssuerKeyCase {
    readonly kid: string;
    readonly alg: string;
    readonly privateKey: KeyObject;
    /** Signature bytes: RFC 7518 §3.4 (ECDSA), RFC 8037 §3.1 (Ed25519), RFC 8017 §8.2.1 (RSA: modulus octets). */
    readonly bytes: number;
  }

  async function partnerGateway(t: TestContext): Promise<{ gw: Gateway; keys: IssuerKeyCase[] }> {
    const keys: IssuerKeyCase[] = [
      {
        kid: 'es256',
        alg: 'ES256',
        privateKey: newKeyPair('ec', { namedCurve: 'P-256' }).privateKey,
        bytes: 64,
      },
      {
        kid: 'es384',
        alg: 'ES384',
        privateKey: newKeyPair('ec', { namedCurve: 'P-384' }).privateKey,
        bytes: 96,
      },
      { kid: 'ed25519', alg: 'EdDSA', privateKey: newKeyPair('ed25519').privateKey, bytes: 64 },
      {
        kid: 'rs2048',
        alg: 'RS256',
        privateKey: newKeyPair('rsa', { modulusLength: 2048 }).privateKey,
        bytes: 256,
      },
      // 257 octets: 343 characters, the last one with 2 unused bits.
      {
        kid: 'rs2056',
        alg: 'RS256',
        privateKey: newKeyPair('rsa', { modulusLength: 2056 }).privateKey,
        bytes: 257,
      },
      {
        kid: 'ps3072',
        alg: 'PS256',
        privateKey: newKeyPair('rsa', { modulusLength: 3072 }).privateKey,
        bytes: 384,
      },
    ];
    const dir = await mkdtemp(join(tmpdir(), 'portaria-spelling-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const keyFile = join(dir, 'partner-keys.json');
    const jwks = keys.map((k) => ({
      ...createPublicKey(k.privateKey).export({ format: 'jwk' }),
      kid: k.kid,
      alg: k.alg,
    }));
    await writeFile(keyFile, JSON.stringify({ keys: jwks }));
    const gw = await startGateway(t, {
      settings: () => ({
        issuers: [
          {
            id: 'partner',
            issuer: PARTNER_ISS,
            keyFile,
            audiences: [AUDIENCE],
            algorithms: ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256'],
          },
        ],
        reload: { enabled: false },
      }),
    });
    return { gw, keys };
  }

  const partnerClaims = (gw: Gateway) =>
    validClaims(gw, {
      iss: PARTNER_ISS,
      aud: AUDIENCE,
      sub: 'partner-app',
      client_id: 'partner-app',
      jti: randomUUID(),
    });

  test('each accepts its canonical signature only: no other unused bits, no other length', async (t) => {
    const { gw, keys } = await partnerGateway(t);
    for (const key of keys) {
      const token = await signWith(key.privateKey, key.alg, partnerClaims(gw), { kid: key.kid });
      const signature = token.split('.')[2] as string;
      assert.equal(signature.length, Math.ceil((key.bytes * 4) / 3), key.kid);
      assert.deepEqual(await call(gw, token), { status: 200, reason: undefined }, key.kid);
      const bytes = Buffer.from(signature, 'base64url');
      const others = [
        ...unusedBitSpellings(signature),
        bytes.subarray(1).toString('base64url'),
        bytes.subarray(3).toString('base64url'),
        Buffer.concat([Buffer.alloc(1), bytes]).toString('base64url'),
        Buffer.concat([Buffer.alloc(3), bytes]).toString('base64url'),
      ];
      for (const other of others) {
        assert.deepEqual(
          await call(gw, withSegment(token, 2, other)),
          { status: 401, reason: 'token-invalid/non-canonical' },
          `${key.kid}: …${other.slice(-4)} (${other.length} characters)`,
        );
      }
    }
    assert.equal(gw.upstream.received.length, keys.length);
  });

  test('a PS256 signature with its leading zero octet dropped is refused (RSASSA-PSS would verify it)', async (t) => {
    const { gw, keys } = await partnerGateway(t);
    const key = keys.find((k) => k.alg === 'PS256') as IssuerKeyCase;
    const header = b64({ alg: 'PS256', kid: key.kid, typ: 'at+jwt' });
    // About one PSS signature in 256 starts with a zero octet.
    for (let attempt = 0; ; attempt++) {
      assert.ok(attempt < 5000, 'no signature starting with a zero octet');
      const input = `${header}.${b64(partnerClaims(gw))}`;
      const signature = sign('sha256', Buffer.from(input), {
        key: key.privateKey,
        padding: constants.RSA_PKCS1_PSS_PADDING,
        saltLength: 32,
      });
      if (signature[0] !== 0) continue;
      assert.deepEqual(await call(gw, `${input}.${signature.toString('base64url')}`), {
        status: 200,
        reason: undefined,
      });
      assert.deepEqual(await call(gw, `${input}.${signature.subarray(1).toString('base64url')}`), {
        status: 401,
        reason: 'token-invalid/non-canonical',
      });
      break;
    }
  });
});

/** The order of P-256 (SEC 2 §2.4.2, FIPS 186-4 D.1.2.3). */
const P256_ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

/** The token with its ES256 signature (r, s) replaced by (r, n − s), which verifies too. */
function twinOf(token: string): string {
  const [h, p, s] = token.split('.') as [string, string, string];
  const signature = Buffer.from(s, 'base64url');
  const sValue = BigInt(`0x${signature.subarray(32).toString('hex')}`);
  const twinS = Buffer.from((P256_ORDER - sValue).toString(16).padStart(64, '0'), 'hex');
  return `${h}.${p}.${Buffer.concat([signature.subarray(0, 32), twinS]).toString('base64url')}`;
}

describe('the ECDSA twin, left by design', () => {
  test('costs one more verification and gains nothing else: same principal, same jti, revoked together', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    const twin = twinOf(token);
    assert.notEqual(twin, token);
    assert.equal(twinOf(twin), token);
    const verifications = async () => {
      const text = await scrape(gw.adminUrl);
      return {
        valid: sample(text, 'portaria_token_verifications_total{issuer="self",outcome="valid"}'),
        misses: sample(text, 'portaria_verify_cache_lookups_total{result="miss"}'),
        hits: sample(text, 'portaria_verify_cache_lookups_total{result="hit"}'),
      };
    };

    assert.equal((await call(gw, token)).status, 200);
    assert.deepEqual(await verifications(), { valid: 1, misses: 1, hits: undefined });
    assert.equal((await call(gw, twin)).status, 200, 'the twin is a valid signature');
    assert.deepEqual(await verifications(), { valid: 2, misses: 2, hits: undefined });
    // Each spelling now has its own cache entry: no further verification for either.
    assert.equal((await call(gw, token)).status, 200);
    assert.equal((await call(gw, twin)).status, 200);
    assert.deepEqual(await verifications(), { valid: 2, misses: 2, hits: 2 });

    const jti = decodeJwt(token).jti as string;
    const seen = gw.upstream.received.map((r) => [
      r.headers['x-client-id'],
      r.headers['x-token-jti'],
    ]);
    assert.deepEqual(
      seen,
      Array(4).fill(['acme', jti]),
      'the upstream sees one principal and one jti',
    );

    await gw.app.revoke(jti);
    for (const spelling of [token, twin]) {
      assert.deepEqual(await call(gw, spelling), {
        status: 401,
        reason: 'token-revoked/revoked',
      });
    }
  });
});
