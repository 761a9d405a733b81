import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { createLocalJWKSet, jwtVerify, SignJWT } from 'jose';
import { ConfigError } from '../../src/config/configError.js';
import { SIGNING_ALGORITHMS } from '../../src/config/types.js';
import { loadKeyRing, readKeyDirectory } from '../../src/keys/loadKeyRing.js';
import { ManualClock } from '../../src/lib/clock.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { newPrivateKey, writeJwk, writePem } from './keyFixtures.js';

const OLDER = '20250101T000000Z-aaaaaaaa';
const NEWER = '20260101T000000Z-bbbbbbbb';

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-keys-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const T0 = Date.UTC(2026, 0, 1);

async function problemsOf(
  dir: string,
  alg: 'ES256' | 'EdDSA' | 'RS256' = 'ES256',
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
            : writeJwk(dir, kid, newPrivateKey(alg2), { alg: alg2, kid });
        await write(OLDER, alg);
        await write(NEWER, alg);
        // A key of another algorithm with an even newer kid is not the signer.
        const other = SIGNING_ALGORITHMS.find((a) => a !== alg) ?? alg;
        await write('20270101T000000Z-cccccccc', other);

        const ring = await loadKeyRing(dir, alg, new ManualClock(T0));
        assert.equal(ring.signingKey.kid, NEWER);
        assert.equal(ring.signingKey.alg, alg);
        assert.deepEqual([...ring.algorithms].sort(), [alg, other].sort());

        const token = await new SignJWT({ scope: 'a' })
          .setProtectedHeader({ alg, kid: ring.signingKey.kid, typ: 'at+jwt' })
          .setSubject('acme')
          .sign(ring.signingKey.privateKey);
        const verification = ring.verificationKey(NEWER);
        assert.ok(verification);
        assert.equal(verification.alg, alg);
        const direct = await jwtVerify(token, verification.key, { algorithms: [alg] });
        assert.equal(direct.payload.sub, 'acme');
        const viaJwks = await jwtVerify(token, createLocalJWKSet({ keys: [...ring.jwks().keys] }));
        assert.equal(viaJwks.protectedHeader.kid, NEWER);
        // The older key still verifies, and does not verify tokens of the newer.
        const older = ring.verificationKey(OLDER);
        assert.ok(older);
        await assert.rejects(jwtVerify(token, older.key, { algorithms: [alg] }));
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
      'keys.dir: hs256.jwk.json: "alg" must be one of ES256, EdDSA, RS256',
      'keys.dir: noalg.jwk.json: "alg" must be one of ES256, EdDSA, RS256',
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
