import assert from 'node:assert/strict';
import { createPrivateKey } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { SIGNING_ALGORITHMS } from '../../src/config/types.js';
import { generateSigningKey, writeSigningKey } from '../../src/keys/generateKey.js';
import { loadKeyRing } from '../../src/keys/loadKeyRing.js';

const NOW = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678));

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-genkey-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('generateSigningKey', () => {
  test('names the key after the UTC time and 8 random hex digits', async () => {
    const a = await generateSigningKey('ES256', NOW);
    const b = await generateSigningKey('ES256', NOW);
    assert.match(a.kid, /^20260102T030405Z-[0-9a-f]{8}$/);
    assert.notEqual(a.kid, b.kid);
  });

  const expected = [
    ['ES256', 'ec', { namedCurve: 'prime256v1' }],
    ['EdDSA', 'ed25519', {}],
    ['RS256', 'rsa', { modulusLength: 3072, publicExponent: 65537n }],
    [
      'PS256',
      'rsa-pss',
      {
        modulusLength: 3072,
        publicExponent: 65537n,
        hashAlgorithm: 'sha256',
        mgf1HashAlgorithm: 'sha256',
        saltLength: 32,
      },
    ],
  ] as const;
  for (const [alg, type, details] of expected) {
    test(`creates a PKCS#8 ${type} key for ${alg}`, async () => {
      const { pem } = await generateSigningKey(alg, NOW);
      assert.match(pem, /^-----BEGIN PRIVATE KEY-----\n/);
      const key = createPrivateKey(pem);
      assert.equal(key.asymmetricKeyType, type);
      assert.deepEqual(key.asymmetricKeyDetails, details);
    });
  }
});

describe('generated keys load as their algorithm', () => {
  for (const alg of SIGNING_ALGORITHMS) {
    test(`a generated ${alg} key file is a ${alg} key to the loader`, async (t) => {
      const dir = await tempDir(t);
      const key = await generateSigningKey(alg, NOW);
      await writeSigningKey(dir, key);
      const ring = await loadKeyRing(dir, alg);
      assert.equal(ring.signingKey.alg, alg);
      assert.equal(ring.jwks().keys[0]?.alg, alg);
    });
  }
});

describe('writeSigningKey', () => {
  test('creates the directory (0700) and the key file (0600) that the loader signs with', async (t) => {
    const dir = join(await tempDir(t), 'keys');
    const key = await generateSigningKey('EdDSA', NOW);
    const path = await writeSigningKey(dir, key);
    assert.equal(path, join(dir, `${key.kid}.pem`));
    assert.equal(await readFile(path, 'utf8'), key.pem);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
    assert.deepEqual(await readdir(dir), [`${key.kid}.pem`]);
    assert.equal((await loadKeyRing(dir, 'EdDSA')).signingKey.kid, key.kid);
  });

  test('never overwrites an existing key file', async (t) => {
    const dir = await tempDir(t);
    const key = await generateSigningKey('ES256', NOW);
    const path = await writeSigningKey(dir, key);
    const other = await generateSigningKey('ES256', NOW);
    await assert.rejects(writeSigningKey(dir, { kid: key.kid, pem: other.pem }), {
      code: 'EEXIST',
    });
    assert.equal(await readFile(path, 'utf8'), key.pem);
    assert.deepEqual(await readdir(dir), [`${key.kid}.pem`]);
  });

  test('refuses a kid that is not a safe file name', async (t) => {
    const dir = await tempDir(t);
    const key = await generateSigningKey('ES256', NOW);
    await assert.rejects(writeSigningKey(dir, { kid: '../escape', pem: key.pem }), /invalid kid/);
    assert.deepEqual(await readdir(dir), []);
  });
});
