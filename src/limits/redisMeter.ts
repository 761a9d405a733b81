/**
 * Quota counters shared by every replica through Redis: one atomic script per check or
 * peek (`quotaScripts.ts`), readings identical to `LocalMeter`'s (`meterState.ts`).
 *
 * Keys, under `<redis.keyPrefix>quota:`: `{<key>}:<policy>:b` (the bucket) and
 * `{<key>}:<policy>:w:<window start ms>` (the window's counter). The key is the hash tag,
 * so one check's keys share a Redis Cluster slot whatever the key holds (the tag is from
 * our `{` to the first `}`, the same prefix in both).
 *
 * When Redis cannot be used the reading is `UNAVAILABLE` and the caller applies its
 * policy (fail open or closed); a check never throws and never waits longer than
 * `redis.commandTimeoutMs` (ioredis's timeout, and a bound of our own around the
 * EVALSHA/EVAL pair). Commands do not queue while disconnected (`redis/redisClient.ts`):
 * that answer is immediate. After a failure Redis is left alone for
 * `RETRY_AFTER_FAILURE_MS`, then one check at a time probes it, so a Redis hung with its
 * connection open does not cost a timeout per request. A check that timed out may still
 * run when Redis thaws (the command was sent): it is then counted though it was answered
 * unavailable, so a hung Redis can only make a quota stricter, never looser.
 */
import type { RedisConfig } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import type { RedisClient } from '../redis/redisClient.js';
import type { LuaScript } from './limitScripts.js';
import { spanOf } from './localMeter.js';
import type { Meter } from './meter.js';
import { readingOf } from './meterState.js';
import { type MeterReading, type QuotaPolicy, UNAVAILABLE } from './quotaPolicy.js';
import { CHECK_QUOTA } from './quotaScripts.js';
import { RETRY_AFTER_FAILURE_MS } from './redisLimiter.js';

/** How long a window's counter outlives the window (clock skew between replicas). */
export const WINDOW_KEY_MARGIN_MS = 60_000;

export interface RedisMeterHooks {
  /** Redis became unusable (`down`) or usable again (`up`); once per transition. */
  stateChanged(state: 'down' | 'up', error?: string): void;
}

const NO_HOOKS: RedisMeterHooks = { stateChanged: () => {} };

type Route = 'redis' | 'probe' | 'none';

export class RedisMeter implements Meter {
  readonly #redis: RedisClient;
  readonly #clock: Clock;
  readonly #hooks: RedisMeterHooks;
  readonly #prefix: string;
  readonly #boundMs: number;
  #down = false;
  /** `performance.now()` before which a down Redis is not tried (real time: I/O pacing). */
  #retryAtMs = 0;
  #probing = false;

  constructor(options: {
    readonly redis: RedisClient;
    readonly redisConfig: RedisConfig;
    readonly clock: Clock;
    readonly hooks?: RedisMeterHooks;
    /** Redis is already known to be unusable (the first connection failed, reported). */
    readonly down?: boolean;
  }) {
    this.#redis = options.redis;
    this.#clock = options.clock;
    this.#hooks = options.hooks ?? NO_HOOKS;
    this.#prefix = `${options.redisConfig.keyPrefix}quota:`;
    this.#boundMs = options.redisConfig.commandTimeoutMs;
    this.#down = options.down === true;
  }

  check(policy: QuotaPolicy, key: string): Promise<MeterReading> {
    return this.#run(policy, key, true);
  }

  peek(policy: QuotaPolicy, key: string): Promise<MeterReading> {
    return this.#run(policy, key, false);
  }

  /** Forgets the bucket and the current window's counter; throws when Redis cannot (an admin call). */
  async reset(policy: QuotaPolicy, key: string): Promise<void> {
    const span = spanOf(policy, this.#clock.now());
    await this.#bounded(
      this.#redis.del(this.#bucketKey(policy, key), this.#windowKey(policy, key, span?.startMs)),
    );
  }

  /** Whether the Redis connection is up (for a `portaria_redis_connected` gauge). */
  connected(): boolean {
    return this.#redis.status === 'ready';
  }

  async close(): Promise<void> {
    // disconnect(), not quit(): QUIT would wait for a Redis that may be gone.
    this.#redis.disconnect();
  }

  async #run(policy: QuotaPolicy, key: string, consume: boolean): Promise<MeterReading> {
    const route = this.#route();
    if (route === 'none') return UNAVAILABLE;
    const nowMs = this.#clock.now();
    const span = spanOf(policy, nowMs);
    try {
      const [allowed, tokens, count] = (await this.#bounded(
        this.#script(
          CHECK_QUOTA,
          [this.#bucketKey(policy, key), this.#windowKey(policy, key, span?.startMs)],
          [
            nowMs,
            consume ? 1 : 0,
            policy.rate === null ? 0 : policy.rate.ratePerSecond / 1000,
            policy.rate?.burst ?? 0,
            policy.quota?.limit ?? 0,
            (span?.endMs ?? nowMs) - nowMs + WINDOW_KEY_MARGIN_MS,
          ],
        ),
      )) as [number, string, number];
      this.#answered(route);
      const state = { tokens: Number(tokens), count: Number(count) };
      return readingOf(policy, state, span, nowMs, Number(allowed) === 1);
    } catch (error) {
      this.#failed(route, error);
      return UNAVAILABLE;
    }
  }

  #bucketKey(policy: QuotaPolicy, key: string): string {
    return `${this.#prefix}{${key}}:${policy.name}:b`;
  }

  #windowKey(policy: QuotaPolicy, key: string, startMs: number | undefined): string {
    return `${this.#prefix}{${key}}:${policy.name}:w:${startMs ?? 0}`;
  }

  #route(): Route {
    if (this.#redis.status !== 'ready') {
      this.#wentDown('not connected');
      return 'none';
    }
    if (!this.#down) return 'redis';
    if (this.#probing || performance.now() < this.#retryAtMs) return 'none';
    this.#probing = true;
    return 'probe';
  }

  #answered(route: Route): void {
    if (route === 'probe') this.#probing = false;
    if (this.#down) {
      this.#down = false;
      this.#hooks.stateChanged('up');
    }
  }

  #failed(route: Route, error: unknown): void {
    if (route === 'probe') this.#probing = false;
    this.#retryAtMs = performance.now() + RETRY_AFTER_FAILURE_MS;
    this.#wentDown((error as Error).message);
  }

  #wentDown(why: string): void {
    if (this.#down) return;
    this.#down = true;
    this.#hooks.stateChanged('down', why);
  }

  /** `work`, or a rejection once `redis.commandTimeoutMs` has passed (never a hang). */
  async #bounded<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('quota check timed out')), this.#boundMs);
      timer.unref();
    });
    try {
      return await Promise.race([work, bound]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** EVALSHA, and EVAL once when Redis answers NOSCRIPT (restarted, flushed, new node). */
  async #script(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (number | string)[],
  ): Promise<unknown> {
    const argv = [...keys, ...args.map(String)];
    try {
      return await this.#redis.evalsha(script.sha1, keys.length, ...argv);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return this.#redis.eval(script.source, keys.length, ...argv);
    }
  }
}
