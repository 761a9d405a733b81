/**
 * `authenticateWithinLimits` through its interface, over the real local limiter (wrapped
 * to write down the calls it receives, in order), the real `PairAttempts` and a manual
 * clock; the credential check is the caller's, here one that accepts, refuses or fails
 * as each test says.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TokenLimitsConfig } from '../../src/config/types.js';
import { PortariaError } from '../../src/errors.js';
import { ManualClock } from '../../src/lib/clock.js';
import {
  authenticateWithinLimits,
  type CredentialCheck,
  type LimitedAuthenticationDeps,
} from '../../src/limits/limitedAuthentication.js';
import type { Limiter } from '../../src/limits/limiter.js';
import { LocalLimiter } from '../../src/limits/localLimiter.js';
import { PairAttempts } from '../../src/limits/pairAttempts.js';
import type { LimitReason } from '../../src/limits/refuseIfWaiting.js';
import {
  NO_TOKEN_LIMITS,
  TokenEndpointLimits,
  tokenLimiterSettings,
  tokenLimitFamilies,
} from '../../src/limits/tokenEndpointLimits.js';

const ADDRESS = '192.0.2.1';
const OFF = { enabled: false, ratePerSecond: 1, burst: 1 };

function limitsConfig(overrides: Partial<TokenLimitsConfig> = {}): TokenLimitsConfig {
  return {
    store: 'local',
    maxTrackedKeys: 100,
    perAddress: OFF,
    perClient: { enabled: true, ratePerSecond: 0.001, burst: 5 },
    failedSecretBackoff: {
      enabled: true,
      freeFailures: 0,
      baseDelayMs: 5000,
      maxDelayMs: 5000,
      forgetAfterSeconds: 900,
    },
    ...overrides,
  };
}

/** What a check is told to do: accept (its result), refuse (its credentials) or fail. */
type Verdict = 'accept' | 'refuse' | 'fail' | Promise<'accept' | 'refuse'>;

/** A refusal of the credentials: the one error recorded as a failure. */
class Refused extends PortariaError {
  constructor() {
    super('invalid-client', 'The client credentials were not accepted.', { reason: 'bad-secret' });
  }
}

interface Setup {
  deps: LimitedAuthenticationDeps & { log: string[] };
  clock: ManualClock;
  limited: LimitReason[];
}

function setup(config = limitsConfig()): Setup {
  const clock = new ManualClock();
  const log: string[] = [];
  const limited: LimitReason[] = [];
  const local = new LocalLimiter(tokenLimiterSettings(config), clock);
  // The real limiter, writing down what it is asked.
  const recording: Limiter = {
    take: (family, key) => {
      log.push(`take ${family.name}`);
      return local.take(family, key);
    },
    checkBackoff: (subject, address) => {
      log.push('checkBackoff');
      return local.checkBackoff(subject, address);
    },
    recordFailure: (subject, address) => {
      log.push('recordFailure');
      return local.recordFailure(subject, address);
    },
    recordSuccess: (subject, address) => {
      log.push('recordSuccess');
      return local.recordSuccess(subject, address);
    },
    close: () => local.close(),
  };
  const attempts = config.failedSecretBackoff.enabled
    ? new PairAttempts(100, config.failedSecretBackoff.forgetAfterSeconds, clock)
    : null;
  return {
    clock,
    limited,
    deps: {
      log,
      limiter: new TokenEndpointLimits(recording, tokenLimitFamilies(config)),
      attempts,
      onLimited: (reason) => limited.push(reason),
    },
  };
}

const CHECK: CredentialCheck<Verdict, Setup['deps'], string> = async (verdict, deps) => {
  deps.log.push('check');
  const outcome = await verdict;
  if (outcome === 'refuse') throw new Refused();
  if (outcome === 'fail') throw new Error('store unavailable');
  return 'client record';
};

function attempt(s: Setup, verdict: Verdict, clientId = 'acme'): Promise<string> {
  return authenticateWithinLimits(clientId, ADDRESS, CHECK, verdict, s.deps);
}

function tooMany(reason: string, retryAfter: string) {
  return (error: unknown) => {
    assert.ok(error instanceof PortariaError, String(error));
    assert.equal(error.code, 'too-many-requests');
    assert.equal(error.reason, reason);
    assert.equal(error.headers?.['retry-after'], retryAfter);
    return true;
  };
}

describe('authenticateWithinLimits', () => {
  test('pair back-off, then the client bucket, then the check; a success is recorded and makes the pair known', async () => {
    const s = setup();
    assert.equal(await attempt(s, 'accept'), 'client record');
    assert.deepEqual(s.deps.log, ['checkBackoff', 'take client', 'check', 'recordSuccess']);
    s.deps.log.length = 0;
    await attempt(s, 'accept');
    assert.deepEqual(
      s.deps.log,
      ['checkBackoff', 'take client-known', 'check', 'recordSuccess'],
      'a known pair draws from its own bucket',
    );
    assert.deepEqual(s.limited, []);
  });

  test('a refusal is recorded and rethrown; the waiting pair is refused before its bucket and its check', async () => {
    const s = setup();
    await assert.rejects(attempt(s, 'refuse'), Refused);
    assert.deepEqual(s.deps.log, ['checkBackoff', 'take client', 'check', 'recordFailure']);
    s.deps.log.length = 0;
    await assert.rejects(attempt(s, 'accept'), tooMany('failed-secret-backoff', '5'));
    assert.deepEqual(s.deps.log, ['checkBackoff'], 'no token taken, no secret looked at');
    assert.deepEqual(s.limited, ['backoff']);
    s.clock.advance(5000);
    assert.equal(await attempt(s, 'accept'), 'client record', 'the wait is over');
    assert.equal(await attempt(s, 'accept', 'other'), 'client record', 'per client');
  });

  test('an error that is not a refusal records nothing', async () => {
    const s = setup();
    await assert.rejects(attempt(s, 'fail'), /store unavailable/);
    assert.deepEqual(s.deps.log, ['checkBackoff', 'take client', 'check']);
    assert.equal(await attempt(s, 'accept'), 'client record', 'no back-off');
  });

  test("a success forgets the pair's failures", async () => {
    const config = limitsConfig();
    const s = setup({
      ...config,
      failedSecretBackoff: { ...config.failedSecretBackoff, freeFailures: 1 },
    });
    await assert.rejects(attempt(s, 'refuse'), Refused);
    await attempt(s, 'accept');
    await assert.rejects(attempt(s, 'refuse'), Refused);
    assert.equal(
      await attempt(s, 'accept'),
      'client record',
      'the second failure is a first again: free',
    );
  });

  test('a pair that failed lately has one check in flight: a concurrent one is 429, Retry-After 1, before its bucket', async () => {
    const config = limitsConfig();
    const s = setup({
      ...config,
      failedSecretBackoff: { ...config.failedSecretBackoff, freeFailures: 10 },
    });
    await assert.rejects(attempt(s, 'refuse'), Refused);
    let release: (verdict: 'accept') => void = () => {};
    const pending = attempt(s, new Promise((resolve) => (release = resolve)));
    s.deps.log.length = 0;
    await assert.rejects(attempt(s, 'accept'), tooMany('failed-secret-backoff', '1'));
    assert.deepEqual(s.deps.log, ['checkBackoff'], 'refused before its bucket and its check');
    assert.deepEqual(s.limited, ['backoff']);
    release('accept');
    assert.equal(await pending, 'client record');
    // Released once its outcome is recorded; a success ends the serialisation.
    const together = await Promise.all([attempt(s, 'accept'), attempt(s, 'accept')]);
    assert.deepEqual(together, ['client record', 'client record']);
  });

  test('a pair with no failure is never serialised: checks at the same moment all run', async () => {
    const s = setup();
    const answers = await Promise.all([1, 2, 3].map(() => attempt(s, 'accept')));
    assert.deepEqual(answers, ['client record', 'client record', 'client record']);
    assert.equal(s.deps.log.filter((entry) => entry === 'check').length, 3);
  });

  test('an empty client bucket is 429 rate-limit-client without a check, and releases the pair', async () => {
    const config = limitsConfig({ perClient: { enabled: true, ratePerSecond: 0.5, burst: 1 } });
    const s = setup({
      ...config,
      failedSecretBackoff: { ...config.failedSecretBackoff, freeFailures: 10 },
    });
    await assert.rejects(attempt(s, 'refuse'), Refused);
    s.deps.log.length = 0;
    await assert.rejects(attempt(s, 'accept'), tooMany('rate-limit-client', '2'));
    assert.deepEqual(s.deps.log, ['checkBackoff', 'take client']);
    // Ended unchecked: the next attempt is not held as if one were in flight.
    await assert.rejects(attempt(s, 'accept'), tooMany('rate-limit-client', '2'));
    assert.deepEqual(s.limited, ['client', 'client']);
  });

  test('with local limits (or none) the check starts in the same turn: no limit is awaited', () => {
    for (const deps of [setup().deps, { ...setup().deps, limiter: NO_TOKEN_LIMITS }]) {
      let started = false;
      const check: CredentialCheck<null, LimitedAuthenticationDeps, string> = async () => {
        started = true;
        return 'client record';
      };
      void authenticateWithinLimits('acme', ADDRESS, check, null, deps);
      assert.equal(started, true);
    }
  });
});
