import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TokenLimitsConfig } from '../../src/config/types.js';
import { ManualClock } from '../../src/lib/clock.js';
import {
  entryToCheck,
  MAX_CLIENTS_PER_ADDRESS,
  OVERFLOW,
} from '../../src/limits/addressBackoff.js';
import { BoundedMap } from '../../src/limits/boundedMap.js';
import {
  afterFailure,
  type BackoffRule,
  type BackoffState,
  backoffWaitMs,
  delayAfterFailures,
} from '../../src/limits/failedSecretBackoff.js';
import { KNOWN_PAIR_MS } from '../../src/limits/limiter.js';
import { backoffEntryKey, clientKey, pairKey } from '../../src/limits/limitKeys.js';
import { LocalBackoffs } from '../../src/limits/localBackoffs.js';
import { sourceAddress } from '../../src/limits/sourceAddress.js';
import { fullBucket, takeToken } from '../../src/limits/tokenBucket.js';
import { localTokenLimits } from '../helpers/localTokenLimits.js';

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
    const limiter = localTokenLimits(config, new ManualClock());
    assert.equal(limiter.takeAddress('192.0.2.1'), 0);
    assert.equal(limiter.takeClient('acme', false), 0);
    limiter.recordFailure('acme', '192.0.2.1');
    assert.equal(limiter.takeAddress('192.0.2.1'), 1000);
    assert.equal(limiter.takeClient('acme', false), 1000);
    assert.equal(limiter.checkPair('acme', '192.0.2.1').waitMs, 60_000);
    // 99 newer keys of each kind: still remembered.
    for (let i = 0; i < 99; i++) {
      limiter.takeAddress(`198.51.100.${i}`);
      limiter.takeClient(`client-${i}`, false);
      limiter.recordFailure(`client-${i}`, `203.0.113.${i}`);
    }
    assert.equal(limiter.checkPair('acme', '192.0.2.1').waitMs, 60_000);
    // The check above made the pair's address recent; 100 newer entries push it out.
    // Buckets of one kind are not pushed out by keys of another.
    for (let i = 0; i < 100; i++) limiter.recordFailure(`other-${i}`, `198.18.0.${i}`);
    assert.equal(limiter.checkPair('acme', '192.0.2.1').waitMs, 0);
    assert.equal(limiter.takeAddress('192.0.2.1'), 1000);
    assert.equal(limiter.takeClient('acme', false), 1000);
    for (let i = 0; i < 100; i++) limiter.takeAddress(`198.51.100.${100 + i}`);
    assert.equal(limiter.takeAddress('192.0.2.1'), 0, 'forgotten: back as a full bucket');
  });

  test('a pair that got a token is known for 48 hours and draws from the known bucket', () => {
    const clock = new ManualClock();
    const limiter = localTokenLimits(config, clock);
    assert.deepEqual(limiter.checkPair('acme', '192.0.2.1'), { waitMs: 0, known: false });
    assert.equal(limiter.takeClient('acme', false), 0);
    assert.equal(limiter.takeClient('acme', false), 1000, 'the unknown bucket is empty');
    limiter.recordSuccess('acme', '192.0.2.1');
    assert.deepEqual(limiter.checkPair('acme', '192.0.2.1'), { waitMs: 0, known: true });
    assert.equal(limiter.checkPair('acme', '192.0.2.2').known, false, 'per address');
    assert.equal(limiter.checkPair('other', '192.0.2.1').known, false, 'per client');
    assert.equal(limiter.takeClient('acme', true), 0, 'the known bucket is its own');
    assert.equal(limiter.takeClient('acme', true), 1000, 'at the client rate');
    // Knowing a pair does not shorten its back-off.
    limiter.recordFailure('acme', '192.0.2.1');
    assert.deepEqual(limiter.checkPair('acme', '192.0.2.1'), { waitMs: 60_000, known: true });
    clock.advance(KNOWN_PAIR_MS - 1);
    assert.equal(limiter.checkPair('acme', '192.0.2.1').known, true);
    clock.advance(1);
    assert.equal(limiter.checkPair('acme', '192.0.2.1').known, false);
  });

  test('with every limit off nothing is tracked, and no pair is known', () => {
    const off = {
      ...config,
      perAddress: { ...config.perAddress, enabled: false },
      perClient: { ...config.perClient, enabled: false },
      failedSecretBackoff: { ...config.failedSecretBackoff, enabled: false },
    };
    const limiter = localTokenLimits(off, new ManualClock());
    limiter.recordSuccess('acme', '192.0.2.1');
    limiter.recordFailure('acme', '192.0.2.1');
    assert.deepEqual(limiter.checkPair('acme', '192.0.2.1'), { waitMs: 0, known: false });
    assert.equal(limiter.takeClient('acme', true), 0);
  });
});

describe('back-off entries per address', () => {
  const rule: BackoffRule = {
    freeFailures: 3,
    baseDelayMs: 1000,
    maxDelayMs: 300_000,
    forgetAfterSeconds: 900,
  };
  const A = '2001:db8:1:2::/64';

  test('an address tracks 16 clients on their own; further clients share its overflow entry', () => {
    const backoffs = new LocalBackoffs(1000, rule);
    for (let i = 0; i < MAX_CLIENTS_PER_ADDRESS; i++) backoffs.recordFailure(`c${i}`, A, false, 0);
    assert.equal(backoffs.size, 16);
    // Three more clients: the overflow entry's three free failures; the fourth waits 1 s.
    for (const client of ['x1', 'x2', 'x3']) backoffs.recordFailure(client, A, false, 0);
    assert.equal(backoffs.waitMs('x9', A, false, 0), 0);
    backoffs.recordFailure('x4', A, false, 0);
    assert.equal(backoffs.size, 17);
    assert.equal(backoffs.waitMs('x9', A, false, 0), 1000, 'any client without an entry waits');
    assert.equal(backoffs.waitMs('c0', A, false, 0), 0, 'a client with its own entry does not');
    assert.equal(backoffs.waitMs('x9', '192.0.2.1', false, 0), 0, 'other addresses do not');
    assert.equal(backoffs.waitMs('x9', A, true, 0), 0, 'a known pair ignores the overflow');
    for (let i = 0; i < 300; i++) backoffs.recordFailure(`y${i}`, A, false, 1000 * i);
    assert.equal(backoffs.size, 17, 'bounded whatever the number of client ids');
  });

  test("a known pair's failures have their own entry even when the address is full", () => {
    const backoffs = new LocalBackoffs(1000, rule);
    for (let i = 0; i < 20; i++) backoffs.recordFailure(`c${i}`, A, false, 0);
    for (let i = 0; i < 4; i++) backoffs.recordFailure('acme', A, true, 0);
    assert.equal(
      backoffs.waitMs('acme', A, true, 0),
      1000,
      'filling the table first does not help',
    );
    assert.equal(backoffs.size, 18);
    backoffs.recordSuccess('acme', A);
    assert.equal(backoffs.waitMs('acme', A, true, 0), 0);
    assert.equal(backoffs.waitMs('zz', A, false, 0), 1000, 'a success leaves the overflow alone');
  });

  test('entries nobody remembers any more free their place', () => {
    const backoffs = new LocalBackoffs(1000, rule);
    for (let i = 0; i < 20; i++) backoffs.recordFailure(`c${i}`, A, false, 0);
    const later = 900_000;
    assert.equal(backoffs.waitMs('c17', A, false, later), 0);
    backoffs.recordFailure('new', A, false, later);
    assert.equal(backoffs.size, 1, 'the dead entries were dropped, the new client has its own');
    assert.deepEqual(entryToCheck(new Map(), 'c0', false, rule, 0), undefined);
  });

  test('at most maxEntries entries in all: the least recently used addresses go first', () => {
    const backoffs = new LocalBackoffs(40, rule);
    for (let i = 0; i < 20; i++) backoffs.recordFailure(`c${i}`, '192.0.2.1', false, 0);
    for (let i = 0; i < 20; i++) backoffs.recordFailure(`c${i}`, '192.0.2.2', false, 0);
    assert.equal(backoffs.size, 34);
    assert.equal(backoffs.waitMs('c0', '192.0.2.1', false, 0), 0, 'touches 192.0.2.1');
    for (let i = 0; i < 10; i++) backoffs.recordFailure(`c${i}`, '192.0.2.3', false, 0);
    assert.equal(backoffs.size, 27, '192.0.2.2 was forgotten whole');
    for (let i = 0; i < 3; i++) backoffs.recordFailure('x', '192.0.2.2', false, 0);
    assert.equal(backoffs.waitMs('x', '192.0.2.2', false, 0), 0, 'it starts over');
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

  test('keys asked for in turn each come out their own (the last key is remembered, never another)', () => {
    const hashedE = clientKey('é');
    assert.ok(clientKey('').startsWith(' '), 'an empty id is hashed');
    const steps: [() => string, string][] = [
      [() => clientKey('acme'), 'acme'],
      [() => clientKey('é'), hashedE],
      [() => clientKey('acme'), 'acme'],
      [() => pairKey('acme', '192.0.2.1'), '192.0.2.1 acme'],
      [() => pairKey('acme', '192.0.2.2'), '192.0.2.2 acme'],
      [() => pairKey('beta', '192.0.2.2'), '192.0.2.2 beta'],
      [() => pairKey('é', '192.0.2.2'), `192.0.2.2 ${hashedE}`],
      [() => pairKey('acme', '192.0.2.1'), '192.0.2.1 acme'],
    ];
    for (const [key, expected] of steps) assert.equal(key(), expected);
  });

  test('a back-off entry key has at most 44 characters and never collides with another id', () => {
    assert.equal(backoffEntryKey('acme'), 'acme');
    assert.equal(backoffEntryKey('a'.repeat(44)), 'a'.repeat(44));
    const long = backoffEntryKey('a'.repeat(45));
    assert.ok(long.startsWith(' ') && long.length === 44, long);
    assert.notEqual(long, backoffEntryKey('a'.repeat(46)));
    assert.equal(backoffEntryKey('x'.repeat(5000)), clientKey('x'.repeat(5000)), 'hashed alike');
    assert.notEqual(backoffEntryKey('a'.repeat(44)), OVERFLOW);
  });
});

describe('source address', () => {
  /** [what, the client's address, the limit key]. */
  const cases: [string, string | undefined, string][] = [
    ['an IPv4 address as is', '192.0.2.1', '192.0.2.1'],
    ['the lowest IPv4 address as is', '0.0.0.0', '0.0.0.0'],
    ['the highest IPv4 address as is', '255.255.255.255', '255.255.255.255'],
    ['an IPv4 address with a leading zero as unknown', '192.0.2.01', 'unknown'],
    ['an IPv4 address in three parts as unknown', '192.0.513', 'unknown'],
    ['an IPv4-mapped address as IPv4', '::ffff:192.0.2.1', '192.0.2.1'],
    ['an IPv6 address as its /64', '2001:DB8::1', '2001:db8::/64'],
    ['the same /64 however spelled', '2001:0db8:0:0:0:0:0:0ff', '2001:db8::/64'],
    ['a full IPv6 address as its /64', '2001:db8:a:b:c:d:e:f', '2001:db8:a:b::/64'],
    ['a /64 with inner zero groups', '2001:0:0:1:ffff::2', '2001:0:0:1::/64'],
    ['a link-local address without its zone', 'fe80::1%eth0', 'fe80::/64'],
    ['IPv6 loopback', '::1', '::/64'],
    ['an IPv4-mapped address in hex as IPv4', '::ffff:c000:201', '192.0.2.1'],
    ['an uncompressed IPv4-mapped address', '0:0:0:0:0:ffff:192.0.2.1', '192.0.2.1'],
    ['a NAT64 well-known-prefix address as IPv4', '64:ff9b::198.51.100.7', '198.51.100.7'],
    ['no address as unknown', undefined, 'unknown'],
    ['an empty address as unknown', '', 'unknown'],
    ['a value that is no address as unknown', 'nonsense', 'unknown'],
  ];
  for (const [name, address, expected] of cases) {
    test(`keys ${name}`, () => {
      assert.equal(sourceAddress(address), expected);
    });
  }
});
