import assert from 'node:assert/strict';
import type { KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { calculateJwkThumbprint, type JWK, jwtVerify, SignJWT } from 'jose';
import { ConfigError } from '../../src/config/configError.js';
import { PortariaError } from '../../src/errors.js';
import { StaticKeySet } from '../../src/issuers/staticKeySet.js';
import { ecKey, issuerConfig, jwksOf, signedBy, within } from '../helpers/jwksServer.js';
import { newKeyPair } from '../helpers/keyPairs.js';

const A = ecKey('key-a');
const B = ecKey('key-b');

async function keyFile(t: TestContext, content: string) {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-issuer-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'issuer-keys');
  await writeFile(path, content);
  const logs: { event: string; detail: Record<string, unknown> }[] = [];
  const set = new StaticKeySet(issuerConfig({ keyFile: path }), {
    index: 2,
    log: (event, detail) => logs.push({ event, detail }),
  });
  t.after(() => set.close());
  return { path, set, logs, rewrite: (text: string) => writeFile(path, text) };
}

const spki = (key: KeyObject) => key.export({ type: 'spki', format: 'pem' }) as string;

async function assertConfigError(promise: Promise<unknown>, ...patterns: RegExp[]) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ConfigError);
    for (const problem of error.problems) assert.match(problem, /^issuers\[2\]\.keyFile: /);
    for (const pattern of patterns) {
      assert.ok(
        error.problems.some((p) => pattern.test(p)),
        `${pattern} in ${error.problems.join(' | ')}`,
      );
    }
    return true;
  });
}

test('a JWK Set file is loaded and looked up synchronously by kid and alg', async (t) => {
  const { set } = await keyFile(t, JSON.stringify(jwksOf(A, B)));
  await set.load();
  await within(set.ready(), 1000, 'ready');
  const key = set.getKey('key-a', 'ES256');
  assert.ok(key);
  await jwtVerify(await signedBy(A), key.key, { algorithms: ['ES256'] });
  assert.equal(set.getKey('key-a', 'RS256'), null, 'another alg');
  assert.equal(set.getKey('key-c', 'ES256'), null, 'unknown kid');
  assert.deepEqual(
    set.state(),
    { usable: true, ageSeconds: null, keys: 2, lastError: null },
    'a file never goes stale: no age (no portaria_jwks_age_seconds series to alert on)',
  );
});

test('PEM public keys get their RFC 7638 thumbprint as kid', async (t) => {
  const ec = newKeyPair('ec', { namedCurve: 'P-256' });
  const ed = newKeyPair('ed25519');
  const rsa = newKeyPair('rsa', { modulusLength: 2048 });
  const { set } = await keyFile(
    t,
    `comment\n${spki(ec.publicKey)}\n${spki(ed.publicKey)}${spki(rsa.publicKey)}`,
  );
  await set.load();
  assert.equal(set.state().keys, 3);
  for (const [pair, alg] of [
    [ec, 'ES256'],
    [ed, 'EdDSA'],
    [rsa, 'RS256'],
  ] as const) {
    const kid = await calculateJwkThumbprint(pair.publicKey.export({ format: 'jwk' }) as JWK);
    const key = set.getKey(kid, alg);
    assert.ok(key, alg);
    const token = await new SignJWT({ sub: 'x' })
      .setProtectedHeader({ alg, kid })
      .sign(pair.privateKey);
    await jwtVerify(token, key.key, { algorithms: [alg] });
  }
});

test('an RSA PEM key is PS256 when the issuer allows PS256 and not RS256', async (t) => {
  const rsa = newKeyPair('rsa', { modulusLength: 2048 });
  const dir = await mkdtemp(join(tmpdir(), 'portaria-issuer-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'rsa.pem');
  await writeFile(path, spki(rsa.publicKey));
  const set = new StaticKeySet(issuerConfig({ keyFile: path, algorithms: ['PS256'] }));
  await set.load();
  const kid = await calculateJwkThumbprint(rsa.publicKey.export({ format: 'jwk' }) as JWK);
  assert.equal(set.getKey(kid, 'PS256')?.alg, 'PS256');
});

test('a bad key file is a ConfigError naming issuers[i].keyFile', async (t) => {
  const priv = newKeyPair('ec', { namedCurve: 'P-256' }).privateKey;
  const small = newKeyPair('rsa', { modulusLength: 1024 }).publicKey;
  const cases: [string, string, RegExp[]][] = [
    ['not JSON nor PEM', 'hello', [/neither a JWK Set \(JSON\) nor PEM/]],
    ['JSON without keys', '{"kty":"EC"}', [/not a JSON object with a "keys" array/]],
    [
      'no usable key',
      JSON.stringify({
        keys: [
          { ...A.jwk, use: 'enc' },
          { ...B.jwk, kid: undefined },
        ],
      }),
      [/holds no usable key/, /keys\[0\]: use is not "sig"/, /keys\[1\]: missing or malformed kid/],
    ],
    [
      'a private key PEM',
      priv.export({ type: 'pkcs8', format: 'pem' }) as string,
      [/keys\[0\]: "PRIVATE KEY" is not a PUBLIC KEY block/],
    ],
    [
      'a broken PEM',
      '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n',
      [/keys\[0\]: not a valid public key/],
    ],
    ['a truncated PEM', '-----BEGIN PUBLIC KEY-----\nAAAA\n', [/no complete PEM block/]],
    ['a small RSA PEM', spki(small), [/RSA modulus under 2048 bits/]],
  ];
  for (const [name, content, patterns] of cases) {
    await t.test(name, async (t) => {
      const { set } = await keyFile(t, content);
      await assertConfigError(set.load(), ...patterns);
      assert.equal(set.state().usable, false);
      assert.ok(set.state().lastError);
      assert.throws(
        () => set.getKey('key-a', 'ES256'),
        (e: unknown) =>
          e instanceof PortariaError &&
          e.code === 'issuer-unavailable' &&
          e.reason === 'issuer-keys-missing',
      );
    });
  }
});

test('a missing key file is a ConfigError', async (t) => {
  const { set, path } = await keyFile(t, '');
  await rm(path);
  await assertConfigError(set.load(), /cannot read .*issuer-keys \(ENOENT\)/);
});

test('a file of only unusable keys names the first 20 and counts the rest', async (t) => {
  const { set } = await keyFile(
    t,
    JSON.stringify({ keys: Array.from({ length: 500 }, () => ({})) }),
  );
  await assert.rejects(set.load(), (error: unknown) => {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.problems.length, 22);
    assert.match(error.problems[0] ?? '', /holds no usable key/);
    assert.match(error.problems[21] ?? '', /… and 480 more$/);
    return true;
  });
});

test('reload picks up a rewritten file and keeps the previous keys when the new file is bad', async (t) => {
  const { set, rewrite, logs } = await keyFile(t, JSON.stringify(jwksOf(A)));
  await set.load();
  await rewrite(JSON.stringify({ keys: [B.jwk, { ...A.jwk, kid: 'x', use: 'enc' }] }));
  await set.reload();
  assert.ok(set.getKey('key-b', 'ES256'));
  assert.equal(set.getKey('key-a', 'ES256'), null);
  assert.ok(
    logs.some((l) => l.event === 'issuer keys skipped' && l.detail.count === 1),
    'a skipped key is logged',
  );

  await rewrite('{ broken');
  await assertConfigError(set.reload(), /neither a JWK Set/);
  assert.ok(set.getKey('key-b', 'ES256'), 'the previous keys still serve');
  assert.equal(set.state().usable, true);
  assert.match(String(set.state().lastError), /neither a JWK Set/);

  await rewrite(JSON.stringify(jwksOf(A)));
  await set.reload();
  assert.equal(set.state().lastError, null);
  assert.ok(set.getKey('key-a', 'ES256'));
});

test('start() loads in the background and ready() resolves', async (t) => {
  const { set } = await keyFile(t, JSON.stringify(jwksOf(A)));
  set.start();
  await within(set.ready(), 1000, 'the background load');
  assert.ok(set.getKey('key-a', 'ES256'));
});
