import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TokenLimitsConfig } from '../../src/config/types.js';
import { ManualClock } from '../../src/lib/clock.js';
import { BoundedMap } from '../../src/limits/boundedMap.js';
import {
  afterFailure,
  type BackoffRule,
  type BackoffState,
  backoffWaitMs,
  delayAfterFailures,
} from '../../src/limits/failedSecretBackoff.js';
import { clientKey, pairKey } from '../../src/limits/limitKeys.js';
import { LocalTokenLimiter } from '../../src/limits/localTokenLimiter.js';
import { sourceAddress } from '../../src/limits/sourceAddress.js';
import { fullBucket, takeToken } from '../../src/limits/tokenBucket.js';

describe('token bucket', () => {
  const rule = { ratePerSecond: 2, burst: 3 };

  test('a new bucket admits the burst, then answers the time until the next token', () => {
    const bucket = fullBucket(rule, 0);
    assert.deepEqual(
      [0, 0, 0].map(() => takeToken(bucket, rule, 0)),
      [0, 0, 0],
    );
    assert.equal(takeToken(bucket, rule, 0), 500);
    assert.equal(takeToken(bucket, rule, 499), 1);
    assert.equal(takeToken(bucket, rule, 500), 0);
    assert.equal(takeToken(bucket, rule, 500), 500);
  });

  test('refill is lazy, capped at the burst, and a clock going backwards adds nothing', () => {
    const bucket = fullBucket(rule, 1000);
    for (let i = 0; i < 3; i++) takeToken(bucket, rule, 1000);
    assert.equal(takeToken(bucket, rule, 1_000_000), 0);
    assert.equal(bucket.tokens, 2, 'refilled to the burst (3), one taken');
    assert.equal(takeToken(bucket, rule, 0), 0);
    assert.equal(takeToken(bucket, rule, 0), 0);
    assert.equal(takeToken(bucket, rule, 0), 500, 'no refill from the past');
  });

  test('a slow rate answers waits over a second, never less than 1 ms', () => {
    const slow = { ratePerSecond: 0.3, burst: 1 };
    const bucket = fullBucket(slow, 0);
    takeToken(bucket, slow, 0);
    assert.equal(takeToken(bucket, slow, 0), 3334);
    assert.equal(takeToken(bucket, slow, 3333), 1);
    assert.equal(takeToken(bucket, slow, 3334), 0);
  });
});

describe('failed-secret back-off', () => {
  const rule: BackoffRule = {
    freeFailures: 3,
    baseDelayMs: 1000,
    maxDelayMs: 300_000,
    forgetAfterSeconds: 900,
  };

  test('the first freeFailures failures cost nothing, then the delay doubles up to maxDelayMs', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 12, 13, 2000].map((n) => delayAfterFailures(n, rule));
    assert.deepEqual(delays, [0, 0, 0, 1000, 2000, 4000, 8000, 256_000, 300_000, 300_000]);
  });

  test('a failure blocks from its own time; the wait counts down; time without failures forgets', () => {
    let state: BackoffState | undefined;
    for (let i = 0; i < 4; i++) state = afterFailure(state, rule, 10_000);
    assert.deepEqual(state, { failures: 4, lastFailureMs: 10_000, blockedUntilMs: 11_000 });
    assert.equal(backoffWaitMs(state, 10_000), 1000);
    assert.equal(backoffWaitMs(state, 10_999), 1);
    assert.equal(backoffWaitMs(state, 11_000), 0);
    state = afterFailure(state, rule, 11_000);
    assert.equal(backoffWaitMs(state, 11_000), 2000);
    // 900 s after the last failure the pair starts over: one free failure again.
    state = afterFailure(state, rule, 11_000 + 900_000);
    assert.deepEqual(state, { failures: 1, lastFailureMs: 911_000, blockedUntilMs: 0 });
    assert.equal(backoffWaitMs(undefined, 0), 0);
  });

  test('a pair is never forgotten while it still waits (maxDelay longer than forgetAfter)', () => {
    const long: BackoffRule = {
      ...rule,
      freeFailures: 0,
      maxDelayMs: 3_600_000,
      baseDelayMs: 3_600_000,
    };
    let state = afterFailure(undefined, long, 0);
    assert.equal(state.blockedUntilMs, 3_600_000);
    state = afterFailure(state, long, 1_000_000);
    assert.equal(state.failures, 2, 'still remembered: it was blocked');
  });
});

describe('bounded map', () => {
  test('inserting into a full map drops the least recently used key', () => {
    const map = new BoundedMap<number>(3);
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3);
    assert.equal(map.get('a'), 1, 'a becomes the most recent');
    map.set('d', 4);
    assert.equal(map.has('b'), false);
    assert.deepEqual(
      ['a', 'c', 'd'].map((k) => map.get(k)),
      [1, 3, 4],
    );
    map.set('c', 30);
    map.set('e', 5);
    assert.equal(map.has('a'), false);
    assert.equal(map.size, 3);
    map.delete('c');
    assert.equal(map.size, 2);
  });

  test('a capacity below 1 is refused', () => {
    assert.throws(() => new BoundedMap(0), RangeError);
  });
});

describe('local limiter', () => {
  const config: TokenLimitsConfig = {
    store: 'local',
    maxTrackedKeys: 100,
    perAddress: { enabled: true, ratePerSecond: 1, burst: 1 },
    perClient: { enabled: true, ratePerSecond: 1, burst: 1 },
    failedSecretBackoff: {
      enabled: true,
      freeFailures: 0,
      baseDelayMs: 60_000,
      maxDelayMs: 60_000,
      forgetAfterSeconds: 900,
    },
  };

  test('tracks at most maxTrackedKeys keys of each kind, forgetting the least recently seen', () => {
    const limiter = new LocalTokenLimiter(config, new ManualClock());
    assert.equal(limiter.takeAddress('192.0.2.1'), 0);
    assert.equal(limiter.takeClient('acme'), 0);
    limiter.recordFailure('acme', '192.0.2.1');
    assert.equal(limiter.takeAddress('192.0.2.1'), 1000);
    assert.equal(limiter.takeClient('acme'), 1000);
    assert.equal(limiter.backoffWait('acme', '192.0.2.1'), 60_000);
    // 99 newer keys of each kind: still remembered.
    for (let i = 0; i < 99; i++) {
      limiter.takeAddress(`198.51.100.${i}`);
      limiter.takeClient(`client-${i}`);
      limiter.recordFailure(`client-${i}`, '203.0.113.1');
    }
    assert.equal(limiter.backoffWait('acme', '192.0.2.1'), 60_000);
    // The touch above made the pair recent; 100 newer pairs push it out. Buckets of one
    // kind are not pushed out by keys of another.
    for (let i = 0; i < 100; i++) limiter.recordFailure(`other-${i}`, '203.0.113.2');
    assert.equal(limiter.backoffWait('acme', '192.0.2.1'), 0);
    assert.equal(limiter.takeAddress('192.0.2.1'), 1000);
    assert.equal(limiter.takeClient('acme'), 1000);
    for (let i = 0; i < 100; i++) limiter.takeAddress(`198.51.100.${100 + i}`);
    assert.equal(limiter.takeAddress('192.0.2.1'), 0, 'forgotten: back as a full bucket');
  });
});

describe('limit keys', () => {
  test('a possible client id is its own key; anything else is a bounded hash', () => {
    assert.equal(clientKey('acme'), 'acme');
    const long = clientKey('x'.repeat(10_000));
    assert.ok(long.startsWith(' ') && long.length <= 44, long);
    assert.notEqual(clientKey('a b'), clientKey('a  b'));
    assert.ok(clientKey('é').startsWith(' '));
    assert.equal(pairKey('acme', '192.0.2.1'), '192.0.2.1 acme');
  });
});

describe('source address', () => {
  const cases: [string, string | undefined, string | undefined, boolean, string][] = [
    ['the peer', '192.0.2.1', undefined, false, '192.0.2.1'],
    ['an IPv4-mapped peer as IPv4', '::ffff:192.0.2.1', undefined, false, '192.0.2.1'],
    ['an IPv6 peer as its /64', '2001:DB8::1', undefined, false, '2001:db8::/64'],
    ['the same /64 however spelled', '2001:0db8:0:0:0:0:0:0ff', undefined, false, '2001:db8::/64'],
    [
      'a full IPv6 address as its /64',
      '2001:db8:a:b:c:d:e:f',
      undefined,
      false,
      '2001:db8:a:b::/64',
    ],
    ['a /64 with inner zero groups', '2001:0:0:1:ffff::2', undefined, false, '2001:0:0:1::/64'],
    ['a link-local peer without its zone', 'fe80::1%eth0', undefined, false, 'fe80::/64'],
    ['IPv6 loopback', '::1', undefined, false, '::/64'],
    ['an IPv4-mapped peer in hex as IPv4', '::ffff:c000:201', undefined, false, '192.0.2.1'],
    ['an uncompressed IPv4-mapped peer', '0:0:0:0:0:ffff:192.0.2.1', undefined, false, '192.0.2.1'],
    [
      'a NAT64 well-known-prefix peer as IPv4',
      '64:ff9b::198.51.100.7',
      undefined,
      false,
      '198.51.100.7',
    ],
    ['a trusted IPv6 entry as its /64', '10.0.0.2', '2001:db8:1:2:3::9', true, '2001:db8:1:2::/64'],
    ['no peer', undefined, undefined, false, 'unknown'],
    [
      'the peer when X-Forwarded-For is not trusted',
      '192.0.2.1',
      '198.51.100.7',
      false,
      '192.0.2.1',
    ],
    [
      'the last X-Forwarded-For entry when trusted',
      '10.0.0.2',
      '203.0.113.9, 198.51.100.7',
      true,
      '198.51.100.7',
    ],
    ['a single trusted entry', '10.0.0.2', ' 198.51.100.7 ', true, '198.51.100.7'],
    [
      'the peer when the last entry is not an IP',
      '10.0.0.2',
      '198.51.100.7, nonsense',
      true,
      '10.0.0.2',
    ],
    ['the peer when trusted but absent', '10.0.0.2', undefined, true, '10.0.0.2'],
  ];
  for (const [name, peer, xff, trust, expected] of cases) {
    test(`is ${name}`, () => {
      assert.equal(sourceAddress(peer, xff, trust), expected);
    });
  }
});
