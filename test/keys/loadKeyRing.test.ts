import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createPrivateKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { createLocalJWKSet, jwtVerify, SignJWT } from 'jose';
import { ConfigError } from '../../src/config/configError.js';
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from '../../src/config/types.js';
import { loadKeyRing, readKeyDirectory } from '../../src/keys/loadKeyRing.js';
import { signJws } from '../../src/keys/signJws.js';
import { ManualClock } from '../../src/lib/clock.js';
import { verifyJwsSignature } from '../../src/verify/jwsSignature.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { newJwkPrivateKey, newPrivateKey, writeJwk, writePem } from './keyFixtures.js';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** The private JWK of a key file, as jose imports it. */
async function joseSigningKey(dir: string, kid: string): Promise<KeyObject> {
  const jwk = JSON.parse(await readFile(join(dir, `${kid}.jwk.json`), 'utf8')) as JsonWebKey;
  return createPrivateKey({ key: jwk, format: 'jwk' });
}

const OLDER = '20250101T000000Z-aaaaaaaa';
const NEWER = '20260101T000000Z-bbbbbbbb';

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-keys-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const T0 = Date.UTC(2026, 0, 1);

/** `openssl genpkey -algorithm RSA-PSS` into `dir/name` (2048 bits unless `options` say otherwise). */
function openssl(dir: string, name: string, options: readonly string[]): void {
  const bits = options.some((o) => o.startsWith('rsa_keygen_bits'))
    ? []
    : ['-pkeyopt', 'rsa_keygen_bits:2048'];
  const args = ['genpkey', '-algorithm', 'RSA-PSS', ...bits, ...options, '-out', join(dir, name)];
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

async function problemsOf(
  dir: string,
  alg: SigningAlgorithm = 'ES256',
  clock = new ManualClock(T0),
) {
  try {
    await loadKeyRing(dir, alg, clock);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    assert.ok(err.message.startsWith(`invalid configuration (keys.dir (${dir})):`));
    return err.problems;
  }
  assert.fail('expected a ConfigError');
}

describe('loadKeyRing', () => {
  for (const alg of SIGNING_ALGORITHMS) {
    for (const format of ['pem', 'jwk'] as const) {
      test(`signs ${alg} tokens with the newest ${format} key and verifies them by kid and JWKS`, async (t) => {
        const dir = await tempDir(t);
        const write = (kid: string, alg2: typeof alg) =>
          format === 'pem'
            ? writePem(dir, kid, newPrivateKey(alg2))
            : writeJwk(dir, kid, newJwkPrivateKey(alg2), { alg: alg2, kid });
        await write(OLDER, alg);
        await write(NEWER, alg);
        // A key of another algorithm with an even newer kid is not the signer.
        const other = SIGNING_ALGORITHMS.find((a) => a !== alg) ?? alg;
        await write('20270101T000000Z-cccccccc', other);

        const ring = await loadKeyRing(dir, alg, new ManualClock(T0));
        assert.equal(ring.signingKey.kid, NEWER);
        assert.equal(ring.signingKey.alg, alg);
        assert.deepEqual([...ring.algorithms].sort(), [alg, other].sort());

        // Signed as the gateway signs; jose verifies it from the published JWKS.
        const header = { alg, kid: ring.signingKey.kid, typ: 'at+jwt' };
        const input = `${b64(header)}.${b64({ sub: 'acme', scope: 'a' })}`;
        const signature = signJws(alg, ring.signingKey.privateKey, Buffer.from(input));
        const token = `${input}.${signature.toString('base64url')}`;
        const verification = ring.verificationKey(NEWER);
        assert.ok(verification);
        assert.equal(verification.alg, alg);
        assert.equal(verifyJwsSignature(token, alg, verification.key), true);
        const jwks = createLocalJWKSet({ keys: [...ring.jwks().keys] });
        const viaJwks = await jwtVerify(token, jwks, { algorithms: [alg] });
        assert.equal(viaJwks.protectedHeader.kid, NEWER);
        assert.equal(viaJwks.payload.sub, 'acme');
        // jose's own signature with the published key's private half verifies here too.
        if (format === 'jwk' || alg !== 'PS256') {
          const joseKey =
            format === 'jwk' ? await joseSigningKey(dir, NEWER) : ring.signingKey.privateKey;
          const bySomeoneElse = await new SignJWT({ scope: 'a' })
            .setProtectedHeader(header)
            .setSubject('acme')
            .sign(joseKey);
          assert.equal(verifyJwsSignature(bySomeoneElse, alg, verification.key), true);
        }
        // The older key still verifies, and does not verify tokens of the newer.
        const older = ring.verificationKey(OLDER);
        assert.ok(older);
        assert.equal(verifyJwsSignature(token, alg, older.key), false);
      });
    }
  }

  test('ignores dotfiles, temporaries and unrelated files', async (t) => {
    const dir = await tempDir(t);
    await writePem(dir, NEWER, newPrivateKey('ES256'));
    await writeFile(join(dir, '.hidden.pem'), 'junk');
    await writeFile(join(dir, `.${NEWER}.0123.tmp`), 'junk');
    await writeFile(join(dir, 'README.md'), 'junk');
    await writeFile(join(dir, 'key.pem.bak'), 'junk');
    const ring = await loadKeyRing(dir, 'ES256', new ManualClock(T0));
    assert.equal(ring.jwks().keys.length, 1);
  });

  test('refuses an EC key on a curve other than P-256', async (t) => {
    const dir = await tempDir(t);
    await writePem(dir, NEWER, newPrivateKey('ES256'));
    await writePem(dir, 'p384', newKeyPair('ec', { namedCurve: 'P-384' }).privateKey);
    assert.deepEqual(await problemsOf(dir), [
      'keys.dir: p384.pem: EC curve secp384r1 is not supported (only P-256, for ES256)',
    ]);
  });

  test('refuses RSA keys under 2048 bits', async (t) => {
    const dir = await tempDir(t);
    await writePem(dir, 'small', newKeyPair('rsa', { modulusLength: 1024 }).privateKey);
    assert.deepEqual(await problemsOf(dir, 'RS256'), [
      'keys.dir: small.pem: RSA key of 1024 bits is too short (at least 2048, for RS256)',
      `token.algorithm: no RS256 key in keys.dir ${dir}`,
    ]);
  });

  test('an RSA PEM key stays RS256; a PS256 configuration says what a PS256 key file is', async (t) => {
    const dir = await tempDir(t);
    await writePem(dir, NEWER, newKeyPair('rsa', { modulusLength: 2048 }).privateKey);
    const ring = await loadKeyRing(dir, 'RS256', new ManualClock(T0));
    assert.equal(ring.signingKey.alg, 'RS256');
    assert.equal(ring.signingKey.privateKey.asymmetricKeyType, 'rsa');
    assert.deepEqual(await problemsOf(dir, 'PS256'), [
      `token.algorithm: no PS256 key in keys.dir ${dir} (its RSA keys are "rsaEncryption" keys, which are RS256: a PS256 key is an RSASSA-PSS key, as "portaria keys generate --alg PS256" writes, or a JWK file with "alg": "PS256")`,
    ]);
  });

  test('an RSASSA-PSS PEM key made by openssl is a PS256 key, restricted or not', async (t) => {
    const dir = await tempDir(t);
    const restricted = [
      '-pkeyopt',
      'rsa_pss_keygen_md:sha256',
      '-pkeyopt',
      'rsa_pss_keygen_mgf1_md:sha256',
      '-pkeyopt',
      'rsa_pss_keygen_saltlen:32',
    ];
    openssl(dir, `${OLDER}.pem`, []);
    openssl(dir, `${NEWER}.pem`, restricted);
    const ring = await loadKeyRing(dir, 'PS256', new ManualClock(T0));
    assert.deepEqual(
      ring.states().map((k) => [k.kid, k.alg]),
      [
        [NEWER, 'PS256'],
        [OLDER, 'PS256'],
      ],
    );
    // Both are held restricted to PS256, so OpenSSL applies its parameters by itself.
    for (const kid of [NEWER, OLDER]) {
      const key = ring.verificationKey(kid)?.key;
      assert.equal(key?.asymmetricKeyType, 'rsa-pss');
      assert.deepEqual(key?.asymmetricKeyDetails, {
        modulusLength: 2048,
        publicExponent: 65537n,
        hashAlgorithm: 'sha256',
        mgf1HashAlgorithm: 'sha256',
        saltLength: 32,
      });
    }
    assert.deepEqual(
      ring.jwks().keys.map(({ kty, alg, use, e }) => ({ kty, alg, use, e })),
      [
        { kty: 'RSA', alg: 'PS256', use: 'sig', e: 'AQAB' },
        { kty: 'RSA', alg: 'PS256', use: 'sig', e: 'AQAB' },
      ],
    );
  });

  test('refuses RSASSA-PSS keys restricted to other parameters than PS256', async (t) => {
    const dir = await tempDir(t);
    openssl(dir, 'sha384.pem', ['-pkeyopt', 'rsa_pss_keygen_md:sha384']);
    openssl(dir, 'salt64.pem', [
      '-pkeyopt',
      'rsa_pss_keygen_md:sha256',
      '-pkeyopt',
      'rsa_pss_keygen_saltlen:64',
    ]);
    assert.deepEqual(await problemsOf(dir, 'PS256'), [
      'keys.dir: salt64.pem: RSASSA-PSS key restricted to sha256, MGF1 with sha1, salt ≥ 64: not a PS256 key (SHA-256, MGF1 with SHA-256, 32-octet salt)',
      'keys.dir: sha384.pem: RSASSA-PSS key restricted to sha384, MGF1 with sha1, salt ≥ 20: not a PS256 key (SHA-256, MGF1 with SHA-256, 32-octet salt)',
      `token.algorithm: no PS256 key in keys.dir ${dir}`,
    ]);
  });

  test('a PS256 JWK file is an RSA JWK with "alg": "PS256", held as an RSASSA-PSS key', async (t) => {
    const dir = await tempDir(t);
    const rsa = newKeyPair('rsa', { modulusLength: 2048 }).privateKey;
    await writeJwk(dir, NEWER, rsa, { alg: 'PS256', use: 'sig' });
    await writeJwk(dir, OLDER, newPrivateKey('ES256'), { alg: 'PS256' });
    assert.deepEqual(await problemsOf(dir, 'PS256'), [
      `keys.dir: ${OLDER}.jwk.json: a PS256 key must have kty "RSA"`,
    ]);
    await rm(join(dir, `${OLDER}.jwk.json`));
    const ring = await loadKeyRing(dir, 'PS256', new ManualClock(T0));
    assert.equal(ring.signingKey.alg, 'PS256');
    assert.equal(ring.signingKey.privateKey.asymmetricKeyType, 'rsa-pss');
    const [jwk] = ring.jwks().keys;
    const { n, e } = rsa.export({ format: 'jwk' });
    assert.deepEqual(jwk, { kty: 'RSA', n, e, kid: NEWER, alg: 'PS256', use: 'sig' });
  });

  test('refuses RSA and RSASSA-PSS keys under 2048 bits for PS256, saying so', async (t) => {
    const dir = await tempDir(t);
    openssl(dir, 'small.pem', ['-pkeyopt', 'rsa_keygen_bits:1024']);
    const small = newKeyPair('rsa', { modulusLength: 1024 }).privateKey;
    await writeJwk(dir, 'smalljwk', small, { alg: 'PS256' });
    assert.deepEqual(await problemsOf(dir, 'PS256'), [
      'keys.dir: small.pem: RSASSA-PSS key of 1024 bits is too short (at least 2048, for PS256)',
      'keys.dir: smalljwk.jwk.json: RSA key of 1024 bits is too short (at least 2048, for PS256)',
      `token.algorithm: no PS256 key in keys.dir ${dir}`,
    ]);
  });

  test('reports every broken file at once, with the file name and why', async (t) => {
    const dir = await tempDir(t);
    const ec = newPrivateKey('ES256');
    await writePem(dir, NEWER, ec);
    await writeFile(join(dir, 'sec1.pem'), ec.export({ type: 'sec1', format: 'pem' }) as string);
    await writeFile(
      join(dir, 'garbage.pem'),
      '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n',
    );
    await writeFile(join(dir, 'bad kid.pem'), 'x');
    await writeFile(join(dir, 'notjson.jwk.json'), '{');
    await writeJwk(dir, 'wrongkid', ec, { alg: 'ES256', kid: 'other' });
    await writeJwk(dir, 'wrongalg', ec, { alg: 'EdDSA' });
    await writeJwk(dir, 'noalg', ec, {});
    await writeJwk(dir, 'hs256', ec, { alg: 'HS256' });
    await writeJwk(dir, 'enc', ec, { alg: 'ES256', use: 'enc' });
    const { d: _d, ...publicOnly } = ec.export({ format: 'jwk' });
    await writeFile(join(dir, 'public.jwk.json'), JSON.stringify({ ...publicOnly, alg: 'ES256' }));
    await writePem(dir, 'dup', ec);
    await writeJwk(dir, 'dup', ec, { alg: 'ES256' });
    await mkdir(join(dir, 'folder.pem'));
    assert.deepEqual(await problemsOf(dir), [
      'keys.dir: bad kid.pem: the kid (file name before the suffix) must match [A-Za-z0-9._-]{1,64}',
      'keys.dir: dup.pem: kid dup is also used by dup.jwk.json',
      'keys.dir: enc.jwk.json: "use" must be "sig"',
      'keys.dir: folder.pem: is a directory',
      'keys.dir: garbage.pem: not a readable PKCS#8 private key',
      'keys.dir: hs256.jwk.json: "alg" must be one of ES256, EdDSA, RS256, PS256',
      'keys.dir: noalg.jwk.json: "alg" must be one of ES256, EdDSA, RS256, PS256',
      'keys.dir: notjson.jwk.json: not valid JSON',
      'keys.dir: public.jwk.json: is not a private key (no "d")',
      'keys.dir: sec1.pem: must be a single unencrypted PKCS#8 private key ("BEGIN PRIVATE KEY")',
      'keys.dir: wrongalg.jwk.json: an EdDSA key must have kty "OKP" with crv "Ed25519"',
      'keys.dir: wrongkid.jwk.json: "kid" "other" differs from the file name\'s kid wrongkid',
    ]);
  });

  test('refuses a directory without a key for the configured algorithm', async (t) => {
    const dir = await tempDir(t);
    await writePem(dir, NEWER, newPrivateKey('EdDSA'));
    assert.deepEqual(await problemsOf(dir, 'ES256'), [
      `token.algorithm: no ES256 key in keys.dir ${dir}`,
    ]);
  });

  test('says how to create a key when the directory is missing', async (t) => {
    const dir = join(await tempDir(t), 'absent');
    assert.deepEqual(await problemsOf(dir), [
      `keys.dir: ${dir} does not exist (create a key with "portaria keys generate --alg ES256")`,
    ]);
  });

  test('follows schedule.json: the ring switches signer and JWKS by its clock', async (t) => {
    const dir = await tempDir(t);
    await writePem(dir, OLDER, newPrivateKey('ES256'));
    await writePem(dir, NEWER, newPrivateKey('ES256'));
    await writeFile(
      join(dir, 'schedule.json'),
      JSON.stringify({
        keys: {
          [OLDER]: {
            publishAt: '1970-01-01T00:00:00Z',
            activateAt: '1970-01-01T00:00:00Z',
            retireAt: '2026-01-01T00:06:00Z',
            removeAt: '2026-01-01T01:07:00Z',
          },
          [NEWER]: { publishAt: '2026-01-01T00:00:00Z', activateAt: '2026-01-01T00:06:00Z' },
        },
      }),
    );
    const clock = new ManualClock(T0 - 1);
    const ring = await loadKeyRing(dir, 'ES256', clock);
    assert.equal(ring.signingKey.kid, OLDER);
    assert.deepEqual(
      ring.jwks().keys.map((k) => k.kid),
      [OLDER],
    );
    clock.set(T0 + 6 * 60_000);
    assert.equal(ring.signingKey.kid, NEWER);
    assert.deepEqual(
      ring.jwks().keys.map((k) => k.kid),
      [NEWER, OLDER],
    );
    clock.set(T0 + 67 * 60_000);
    assert.deepEqual(
      ring.jwks().keys.map((k) => k.kid),
      [NEWER],
    );
  });

  test("reports schedule problems with the file path, with the key files' problems", async (t) => {
    const dir = await tempDir(t);
    await writePem(dir, NEWER, newPrivateKey('ES256'));
    await writeFile(join(dir, 'broken.pem'), 'x');
    await writeFile(
      join(dir, 'schedule.json'),
      JSON.stringify({
        keys: {
          [NEWER]: { publishAt: '2026-01-01T00:10:00Z', activateAt: '2026-01-01T00:00:00Z' },
          ghost: { publishAt: '2026-01-01T00:00:00Z', activateAt: '2026-01-01T00:00:00Z' },
          broken: { publishAt: '2026-01-01T00:00:00Z', activateAt: '2026-01-01T00:00:00Z' },
        },
      }),
    );
    const file = `keys.dir (${dir})/schedule.json`;
    assert.deepEqual(await problemsOf(dir), [
      'keys.dir: broken.pem: must be a single unencrypted PKCS#8 private key ("BEGIN PRIVATE KEY")',
      `${file}: keys.${NEWER}.activateAt: must not be before publishAt (publish ahead, then sign)`,
      `${file}: keys.ghost: no key file ghost.pem or ghost.jwk.json`,
    ]);
  });

  test("a removed key's file may be deleted: its schedule entry is then ignored", async (t) => {
    const dir = await tempDir(t);
    await writePem(dir, NEWER, newPrivateKey('ES256'));
    const gone = '20250101T000000Z-deleted0';
    const removeAt = '2026-01-01T01:00:00Z';
    await writeFile(
      join(dir, 'schedule.json'),
      JSON.stringify({
        keys: {
          [NEWER]: { publishAt: '2025-12-31T23:00:00Z', activateAt: '2025-12-31T23:06:00Z' },
          [gone]: {
            publishAt: '2025-01-01T00:00:00Z',
            activateAt: '2025-01-01T00:00:00Z',
            retireAt: '2025-12-31T23:06:00Z',
            removeAt,
          },
        },
      }),
    );
    // Still published and verifying until removeAt: its file is missing, a problem.
    const file = `keys.dir (${dir})/schedule.json`;
    assert.deepEqual(await problemsOf(dir, 'ES256', new ManualClock(T0 + 3_599_999)), [
      `${file}: keys.${gone}: no key file ${gone}.pem or ${gone}.jwk.json`,
    ]);
    // From removeAt on, nothing would use the key: the entry is ignored.
    const ring = await loadKeyRing(dir, 'ES256', new ManualClock(T0 + 3_600_000));
    assert.deepEqual(
      ring.states().map((k) => k.kid),
      [NEWER],
    );
    const { schedule } = await readKeyDirectory(dir, T0 + 3_600_000);
    assert.deepEqual([...schedule.keys()], [NEWER]);
  });

  test('refuses to start when no key of the algorithm is active now', async (t) => {
    const dir = await tempDir(t);
    await writePem(dir, NEWER, newPrivateKey('ES256'));
    await writeFile(
      join(dir, 'schedule.json'),
      JSON.stringify({
        keys: {
          [NEWER]: { publishAt: '2026-01-01T00:00:00Z', activateAt: '2026-01-01T00:06:00Z' },
        },
      }),
    );
    assert.deepEqual(await problemsOf(dir, 'ES256', new ManualClock(T0)), [
      `token.algorithm: no ES256 key is active now in keys.dir ${dir} (see "portaria keys list")`,
    ]);
    const ring = await loadKeyRing(dir, 'ES256', new ManualClock(T0 + 6 * 60_000));
    assert.equal(ring.signingKey.kid, NEWER);
    // readKeyDirectory (keys list, keys rotate) does not require an active key.
    const { keys, schedule } = await readKeyDirectory(dir, T0);
    assert.deepEqual(
      keys.map((k) => k.kid),
      [NEWER],
    );
    assert.equal(schedule.get(NEWER)?.activateAt, T0 + 6 * 60_000);
  });
});
