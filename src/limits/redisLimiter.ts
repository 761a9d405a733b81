/**
 * Limits shared by every replica through Redis: the same answers as `LocalLimiter`, each
 * atomic and one round trip (a Lua script, `limitScripts.ts`), under keys with TTLs so
 * nothing stays behind. When Redis cannot be used the call is answered by a local limiter
 * and counted (`hooks.fallback`, with the family's label, `backoff` or `record`): a
 * request is never refused or failed because of Redis. Commands do not queue while the
 * connection is down (`redis/redisClient.ts`), so a fallback then costs nothing; one that
 * goes down mid-command costs `redis.commandTimeoutMs`. After a failure Redis is left
 * alone for `RETRY_AFTER_FAILURE_MS`, and then one call at a time probes it, so a Redis
 * hung with its connection open does not cost a timeout per request. While it falls back,
 * each replica limits on its own and remembers only the failures it saw.
 *
 * Keys, under `<redis.keyPrefix>limits:`: `<family>:<key>` (a bucket), `backoff:<address>`
 * (an address's back-off entries) and `known:<address> <subject key>` (a known pair); in a
 * Redis Cluster the address is the hash tag of the last two, so a script's keys share a
 * slot.
 */
import type { RedisConfig } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { isRedisCluster, type RedisClient } from '../redis/redisClient.js';
import { MAX_CLIENTS_PER_ADDRESS } from './addressBackoff.js';
import type { BackoffRule } from './failedSecretBackoff.js';
import {
  type BucketFamily,
  KNOWN_PAIR_MS,
  type Limiter,
  type LimiterSettings,
  type PairCheck,
  tracksKnownPairs,
  UNKNOWN_PAIR,
} from './limiter.js';
import { backoffEntryKey, clientKey, pairKey } from './limitKeys.js';
import {
  CHECK_PAIR,
  type LuaScript,
  RECORD_FAILURE,
  RECORD_SUCCESS,
  TAKE_TOKEN,
} from './limitScripts.js';
import type { LocalLimiter } from './localLimiter.js';

/** After a failed command, how long every call is answered locally before Redis is tried again. */
export const RETRY_AFTER_FAILURE_MS = 2000;

/** Which call fell back: a family's label, the back-off check, or a record (bounded). */
export type FallbackCheck<Label extends string> = Label | 'backoff' | 'record';

export interface RedisLimiterHooks<Label extends string = string> {
  /** A call answered locally because Redis could not be used. */
  fallback(check: FallbackCheck<Label>): void;
  /** Redis became unusable (`down`) or usable again (`up`); once per transition. */
  stateChanged(state: 'down' | 'up', error?: string): void;
}

/** How one call reaches Redis: directly, as the one probe of a down Redis, or not at all. */
type Route = 'redis' | 'probe' | 'local';

export class RedisLimiter<Label extends string = string> implements Limiter<Label> {
  readonly #redis: RedisClient;
  readonly #local: LocalLimiter;
  readonly #clock: Clock;
  readonly #hooks: RedisLimiterHooks<Label>;
  readonly #prefix: string;
  readonly #backoff: BackoffRule | null;
  readonly #knownPairs: boolean;
  /** Redis Cluster: a pair's two keys carry the address as hash tag (one slot per script). */
  readonly #clustered: boolean;
  #down = false;
  /** `performance.now()` before which a down Redis is not tried (real time: I/O pacing). */
  #retryAtMs = 0;
  /** One call is trying a down Redis; the others answer locally meanwhile. */
  #probing = false;

  constructor(options: {
    readonly settings: LimiterSettings;
    readonly redisConfig: RedisConfig;
    readonly redis: RedisClient;
    readonly local: LocalLimiter;
    readonly clock: Clock;
    readonly hooks: RedisLimiterHooks<Label>;
    /** Redis is already known to be unusable (the first connection failed). */
    readonly down?: boolean;
  }) {
    this.#redis = options.redis;
    this.#local = options.local;
    this.#clock = options.clock;
    this.#hooks = options.hooks;
    this.#prefix = `${options.redisConfig.keyPrefix}limits:`;
    this.#backoff = options.settings.backoff;
    this.#knownPairs = tracksKnownPairs(options.settings);
    this.#clustered = isRedisCluster(options.redisConfig);
    this.#down = options.down === true;
  }

  /** Whether the Redis connection is up (for `portaria_redis_connected{role="limits"}`). */
  connected(): boolean {
    return this.#redis.status === 'ready';
  }

  async take(family: BucketFamily<Label>, key: string): Promise<number> {
    const route = this.#route(family.label);
    if (route === 'local') return this.#local.take(family, key);
    const { ratePerSecond, burst } = family.rule;
    try {
      const wait = await this.#script(
        TAKE_TOKEN,
        [`${this.#prefix}${family.name}:${key}`],
        [this.#clock.now(), ratePerSecond / 1000, burst],
      );
      this.#answered(route);
      return Number(wait);
    } catch (error) {
      this.#failed(route, family.label, error);
      return this.#local.take(family, key);
    }
  }

  checkBackoff(subject: string, address: string): Promise<PairCheck> | PairCheck {
    if (!this.#knownPairs) return UNKNOWN_PAIR;
    return this.#checkShared(subject, address);
  }

  async #checkShared(subject: string, address: string): Promise<PairCheck> {
    const route = this.#route('backoff');
    if (route === 'local') return this.#local.checkBackoff(subject, address);
    const rule = this.#backoff;
    try {
      let check: PairCheck;
      if (rule === null) {
        const known = await this.#redis.exists(this.#knownKey(subject, address));
        check = { waitMs: 0, known: known === 1 };
      } else {
        const [waitMs, known] = (await this.#script(CHECK_PAIR, this.#pairKeys(subject, address), [
          this.#clock.now(),
          backoffEntryKey(subject),
          rule.forgetAfterSeconds * 1000,
        ])) as [number, number];
        check = { waitMs: Number(waitMs), known: Number(known) === 1 };
      }
      this.#answered(route);
      return check;
    } catch (error) {
      this.#failed(route, 'backoff', error);
      return this.#local.checkBackoff(subject, address);
    }
  }

  async recordFailure(subject: string, address: string): Promise<void> {
    const rule = this.#backoff;
    if (rule === null) return;
    const route = this.#route('record');
    if (route === 'local') return this.#local.recordFailure(subject, address);
    try {
      await this.#script(RECORD_FAILURE, this.#pairKeys(subject, address), [
        this.#clock.now(),
        backoffEntryKey(subject),
        rule.freeFailures,
        rule.baseDelayMs,
        rule.maxDelayMs,
        rule.forgetAfterSeconds * 1000,
        MAX_CLIENTS_PER_ADDRESS,
      ]);
      this.#answered(route);
    } catch (error) {
      this.#failed(route, 'record', error);
      this.#local.recordFailure(subject, address);
    }
  }

  async recordSuccess(subject: string, address: string): Promise<void> {
    if (!this.#knownPairs) return;
    // The local fallback may hold failures seen while Redis was down: forget them too; and
    // it knows the pair if Redis goes away.
    this.#local.recordSuccess(subject, address);
    const route = this.#route('record');
    if (route === 'local') return;
    try {
      await this.#script(RECORD_SUCCESS, this.#pairKeys(subject, address), [
        backoffEntryKey(subject),
        KNOWN_PAIR_MS,
      ]);
      this.#answered(route);
    } catch (error) {
      this.#failed(route, 'record', error);
    }
  }

  async close(): Promise<void> {
    // disconnect(), not quit(): QUIT would wait for a Redis that may be gone.
    this.#redis.disconnect();
  }

  /** The address's back-off hash and the pair's known mark (KEYS of the pair scripts). */
  #pairKeys(subject: string, address: string): string[] {
    return [`${this.#prefix}backoff:${this.#tag(address)}`, this.#knownKey(subject, address)];
  }

  #knownKey(subject: string, address: string): string {
    if (!this.#clustered) return `${this.#prefix}known:${pairKey(subject, address)}`;
    // The address comes first, so its tag is the key's first `{…}`: a client id's braces
    // never decide the slot.
    return `${this.#prefix}known:${this.#tag(address)} ${clientKey(subject)}`;
  }

  #tag(address: string): string {
    return this.#clustered ? `{${address}}` : address;
  }

  /** Whether this call may use Redis; `local` is counted as a fallback here. */
  #route(check: FallbackCheck<Label>): Route {
    if (this.#redis.status !== 'ready') {
      this.#fellBack(check, 'not connected');
      return 'local';
    }
    if (!this.#down) return 'redis';
    if (this.#probing || performance.now() < this.#retryAtMs) {
      this.#fellBack(check, 'unusable');
      return 'local';
    }
    this.#probing = true;
    return 'probe';
  }

  /** Redis answered a call that `#route` let through. */
  #answered(route: Route): void {
    if (route === 'probe') this.#probing = false;
    if (this.#down) {
      this.#down = false;
      this.#hooks.stateChanged('up');
    }
  }

  /** Redis failed a call that `#route` let through: the caller answers locally. */
  #failed(route: Route, check: FallbackCheck<Label>, error: unknown): void {
    if (route === 'probe') this.#probing = false;
    this.#retryAtMs = performance.now() + RETRY_AFTER_FAILURE_MS;
    this.#fellBack(check, (error as Error).message);
  }

  #fellBack(check: FallbackCheck<Label>, why: string): void {
    this.#hooks.fallback(check);
    if (!this.#down) {
      this.#down = true;
      this.#hooks.stateChanged('down', why);
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
