import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import type { KeySchedule } from '../../src/keys/keySchedule.js';
import { loadKeyRing } from '../../src/keys/loadKeyRing.js';
import { planRotation, RotationRefused, rotateKeys } from '../../src/keys/rotateKeys.js';
import { ManualClock } from '../../src/lib/clock.js';
import { newPrivateKey, writePem } from './keyFixtures.js';

const T0 = Date.UTC(2026, 0, 1);
const S = 1000;
const TIMING = { jwksMaxAgeSeconds: 300, clockSkewSeconds: 60, maxLifetimeSeconds: 3600 };

function plan(
  keys: { kid: string; alg: 'ES256' | 'EdDSA' }[],
  schedule: [string, KeySchedule][],
  now = T0,
) {
  return planRotation({
    keys,
    schedule: new Map(schedule),
    algorithm: 'ES256',
    newKid: 'new',
    now,
    timing: TIMING,
  });
}

describe('planRotation', () => {
  test('publishes the new key now, activates it after max-age + skew, and retires every key still allowed to sign', () => {
    const result = plan(
      [
        { kid: 'k1', alg: 'ES256' },
        { kid: 'k2', alg: 'ES256' },
        { kid: 'ed', alg: 'EdDSA' },
      ],
      [],
    );
    assert.deepEqual(result.added, {
      kid: 'new',
      schedule: { publishAt: T0, activateAt: T0 + 360 * S, retireAt: null, removeAt: null },
    });
    const retired = {
      publishAt: 0,
      activateAt: 0,
      retireAt: T0 + 360 * S,
      removeAt: T0 + 4020 * S,
    };
    // The signer (greatest kid) first; the EdDSA key (another algorithm) is left alone.
    assert.deepEqual(result.retiring, [
      { kid: 'k2', schedule: retired },
      { kid: 'k1', schedule: retired },
    ]);
    assert.deepEqual([...result.schedule.keys()].sort(), ['k1', 'k2', 'new']);
  });

  test('refuses while a key has activateAt in the future', () => {
    const pending: [string, KeySchedule][] = [
      ['b', { publishAt: T0, activateAt: T0 + 360 * S, retireAt: null, removeAt: null }],
    ];
    assert.throws(
      () =>
        plan(
          [
            { kid: 'a', alg: 'ES256' },
            { kid: 'b', alg: 'ES256' },
          ],
          pending,
          T0 + 359 * S,
        ),
      (err: unknown) =>
        err instanceof RotationRefused &&
        err.message ===
          'a rotation is already pending: b activates at 2026-01-01T00:06:00Z (see "portaria keys list")',
    );
  });

  test('refuses when no key of the algorithm signs now', () => {
    assert.throws(
      () => plan([{ kid: 'ed', alg: 'EdDSA' }], []),
      /^RotationRefused: no ES256 key is active now to rotate from/,
    );
  });

  test("rotates again once the previous rotation activated, keeping the retired key's schedule", () => {
    const a: KeySchedule = {
      publishAt: 0,
      activateAt: 0,
      retireAt: T0 + 360 * S,
      removeAt: T0 + 4020 * S,
    };
    const b: KeySchedule = {
      publishAt: T0,
      activateAt: T0 + 360 * S,
      retireAt: null,
      removeAt: null,
    };
    const now = T0 + 1000 * S;
    const result = plan(
      [
        { kid: 'a', alg: 'ES256' },
        { kid: 'b', alg: 'ES256' },
      ],
      [
        ['a', a],
        ['b', b],
      ],
      now,
    );
    assert.equal(result.schedule.get('a'), a);
    assert.deepEqual(result.retiring, [
      {
        kid: 'b',
        schedule: { ...b, retireAt: now + 360 * S, removeAt: now + 4020 * S },
      },
    ]);
  });

  test("moves a signer's earlier retireAt to the new activateAt, so signing never pauses", () => {
    const a: KeySchedule = {
      publishAt: 0,
      activateAt: 0,
      retireAt: T0 + 60 * S,
      removeAt: T0 + 90_000 * S,
    };
    const result = plan([{ kid: 'a', alg: 'ES256' }], [['a', a]]);
    assert.deepEqual(result.retiring, [
      { kid: 'a', schedule: { ...a, retireAt: T0 + 360 * S, removeAt: T0 + 90_000 * S } },
    ]);
  });
});

describe('planRotation to another algorithm', () => {
  test("retires every active key of token.algorithm at the new key's activation", () => {
    const result = planRotation({
      keys: [
        { kid: 'k1', alg: 'ES256' },
        { kid: 'k2', alg: 'ES256' },
        { kid: 'ed', alg: 'EdDSA' },
      ],
      schedule: new Map(),
      algorithm: 'ES256',
      newAlgorithm: 'PS256',
      newKid: 'new',
      now: T0,
      timing: TIMING,
    });
    const retired = {
      publishAt: 0,
      activateAt: 0,
      retireAt: T0 + 360 * S,
      removeAt: T0 + 4020 * S,
    };
    assert.deepEqual(result.retiring, [
      { kid: 'k2', schedule: retired },
      { kid: 'k1', schedule: retired },
    ]);
    assert.equal(result.added.schedule.activateAt, T0 + 360 * S);
  });

  test('after a hand-over, a rotation under the old token.algorithm retires the key that took over', () => {
    const schedule = new Map<string, KeySchedule>([
      ['a', { publishAt: 0, activateAt: 0, retireAt: T0 - 100 * S, removeAt: T0 + 3600 * S }],
      ['b', { publishAt: T0 - 500 * S, activateAt: T0 - 100 * S, retireAt: null, removeAt: null }],
    ]);
    const result = planRotation({
      keys: [
        { kid: 'a', alg: 'ES256' },
        { kid: 'b', alg: 'PS256' },
      ],
      schedule,
      algorithm: 'ES256',
      newAlgorithm: 'PS256',
      newKid: 'c',
      now: T0,
      timing: TIMING,
    });
    assert.deepEqual(
      result.retiring.map((r) => [r.kid, r.schedule.retireAt]),
      [['b', T0 + 360 * S]],
    );
  });
});

describe('rotateKeys', () => {
  async function tempDir(t: TestContext): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'portaria-rotate-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    return dir;
  }

  test('writes the new key and schedule.json, which the loader then follows', async (t) => {
    const dir = await tempDir(t);
    await writePem(dir, 'a', newPrivateKey('ES256'));
    const result = await rotateKeys(dir, { algorithm: 'ES256', now: new Date(T0), ...TIMING });
    const b = result.added.kid;
    assert.match(b, /^20260101T000000Z-[0-9a-f]{8}$/);
    assert.equal(result.path, join(dir, `${b}.pem`));
    assert.deepEqual((await readdir(dir)).sort(), [`${b}.pem`, 'a.pem', 'schedule.json'].sort());
    assert.deepEqual(JSON.parse(await readFile(join(dir, 'schedule.json'), 'utf8')), {
      keys: {
        a: {
          publishAt: '1970-01-01T00:00:00Z',
          activateAt: '1970-01-01T00:00:00Z',
          retireAt: '2026-01-01T00:06:00Z',
          removeAt: '2026-01-01T01:07:00Z',
        },
        [b]: {
          publishAt: '2026-01-01T00:00:00Z',
          activateAt: '2026-01-01T00:06:00Z',
          retireAt: null,
          removeAt: null,
        },
      },
    });
    const clock = new ManualClock(T0 + 360 * S - 1);
    const ring = await loadKeyRing(dir, 'ES256', clock);
    assert.equal(ring.signingKey.kid, 'a');
    clock.advance(1);
    assert.equal(ring.signingKey.kid, b);
  });

  test('--to PS256 from ES256: a PS256 key that ES256 gateways sign with from its activation', async (t) => {
    const dir = await tempDir(t);
    await writePem(dir, 'a', newPrivateKey('ES256'));
    const result = await rotateKeys(dir, {
      algorithm: 'ES256',
      to: 'PS256',
      now: new Date(T0),
      ...TIMING,
    });
    assert.equal(result.alg, 'PS256');
    const b = result.added.kid;
    const clock = new ManualClock(T0 + 360 * S - 1);
    const ring = await loadKeyRing(dir, 'ES256', clock);
    assert.deepEqual(
      ring.jwks().keys.map((k) => [k.kid, k.alg, k.kty]),
      [
        ['a', 'ES256', 'EC'],
        [b, 'PS256', 'RSA'],
      ],
    );
    assert.equal(ring.signingKey.alg, 'ES256');
    clock.advance(1);
    assert.deepEqual([ring.signingKey.kid, ring.signingKey.alg], [b, 'PS256']);
    // A gateway configured PS256 refuses to start before the hand-over, never signing ES256.
    await assert.rejects(loadKeyRing(dir, 'PS256', new ManualClock(T0 + 360 * S - 1)), {
      message: new RegExp(`no PS256 key is active now in keys.dir ${dir}`),
    });
    assert.equal((await loadKeyRing(dir, 'PS256', clock)).signingKey.kid, b);
    // The next rotation under the old configuration stays with PS256, the signer's algorithm.
    const again = await rotateKeys(dir, {
      algorithm: 'ES256',
      now: new Date(T0 + 360 * S),
      ...TIMING,
    });
    assert.equal(again.alg, 'PS256');
    assert.deepEqual(
      again.retiring.map((r) => r.kid),
      [b],
    );
  });

  test('changes nothing when the directory does not load', async (t) => {
    const dir = await tempDir(t);
    await writePem(dir, 'a', newPrivateKey('ES256'));
    await rm(join(dir, 'a.pem'));
    await writePem(dir, 'bad kid', newPrivateKey('ES256'));
    await assert.rejects(
      rotateKeys(dir, { algorithm: 'ES256', now: new Date(T0), ...TIMING }),
      ConfigError,
    );
    assert.deepEqual(await readdir(dir), ['bad kid.pem']);
  });
});

describe('rotateKeys at the same moment', () => {
  test('two rotations run one after the other: the second is refused, no key is left unscheduled', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'portaria-rotate-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await writePem(dir, 'a', newPrivateKey('ES256'));
    const rotate = () => rotateKeys(dir, { algorithm: 'ES256', now: new Date(T0), ...TIMING });
    const results = await Promise.allSettled([rotate(), rotate()]);
    const done = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r) => r.status === 'rejected');
    assert.equal(done.length, 1);
    assert.equal(refused.length, 1);
    assert.ok(refused[0]?.status === 'rejected' && refused[0].reason instanceof RotationRefused);
    const schedule = JSON.parse(await readFile(join(dir, 'schedule.json'), 'utf8')) as {
      keys: Record<string, unknown>;
    };
    const keyFiles = (await readdir(dir)).filter((name) => name.endsWith('.pem'));
    assert.deepEqual(
      keyFiles.map((name) => name.slice(0, -'.pem'.length)).sort(),
      Object.keys(schedule.keys).sort(),
    );
  });
});
