/**
 * Token limits shared by every replica through Redis: the same checks as
 * `LocalTokenLimiter`, each atomic and one round trip (a Lua script, `limitScripts.ts`),
 * under keys with TTLs so nothing stays behind. When Redis cannot be used the check is
 * answered by a local limiter and counted: a token request is never refused or failed
 * because of Redis. After a failure Redis is left alone for `RETRY_AFTER_FAILURE_MS`, so a
 * hung Redis does not cost a timeout per request. Details: docs/architecture.md.
 */
import type { RedisConfig, TokenLimitsConfig } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { isRedisCluster, type RedisClient } from '../redis/redisClient.js';
import { MAX_CLIENTS_PER_ADDRESS } from './addressBackoff.js';
import { backoffEntryKey, clientKey, pairKey } from './limitKeys.js';
import {
  CHECK_PAIR,
  type LuaScript,
  RECORD_FAILURE,
  RECORD_SUCCESS,
  TAKE_TOKEN,
} from './limitScripts.js';
import type { LocalTokenLimiter } from './localTokenLimiter.js';
import { KNOWN_PAIR_MS, type PairCheck, type TokenLimiter, UNKNOWN_PAIR } from './tokenLimiter.js';

/** After a failed command, how long every check is answered locally before Redis is tried again. */
export const RETRY_AFTER_FAILURE_MS = 2000;

/** Which operation fell back (a bounded metric label). */
export type LimitCheck = 'address' | 'client' | 'backoff' | 'record';

export interface RedisLimiterHooks {
  /** A check answered locally because Redis could not be used. */
  fallback(check: LimitCheck): void;
  /** Redis became unusable (`down`) or usable again (`up`); once per transition. */
  stateChanged(state: 'down' | 'up', error?: string): void;
}

export class RedisTokenLimiter implements TokenLimiter {
  readonly #config: TokenLimitsConfig;
  readonly #redis: RedisClient;
  readonly #local: LocalTokenLimiter;
  readonly #clock: Clock;
  readonly #hooks: RedisLimiterHooks;
  readonly #prefix: string;
  /** Redis Cluster: a pair's two keys carry the address as hash tag (one slot per script). */
  readonly #clustered: boolean;
  /** Per-millisecond rates, computed once. */
  readonly #addressRate: number;
  readonly #clientRate: number;
  #down = false;
  /** `performance.now()` before which a down Redis is not tried (real time: I/O pacing). */
  #retryAtMs = 0;
  /** One check is trying a down Redis; the others answer locally meanwhile. */
  #probing = false;

  constructor(options: {
    readonly config: TokenLimitsConfig;
    readonly redisConfig: RedisConfig;
    readonly redis: RedisClient;
    readonly local: LocalTokenLimiter;
    readonly clock: Clock;
    readonly hooks: RedisLimiterHooks;
    /** Redis is already known to be unusable (the first connection failed). */
    readonly down?: boolean;
  }) {
    this.#config = options.config;
    this.#redis = options.redis;
    this.#local = options.local;
    this.#clock = options.clock;
    this.#hooks = options.hooks;
    this.#prefix = `${options.redisConfig.keyPrefix}limits:`;
    this.#clustered = isRedisCluster(options.redisConfig);
    this.#addressRate = options.config.perAddress.ratePerSecond / 1000;
    this.#clientRate = options.config.perClient.ratePerSecond / 1000;
    this.#down = options.down === true;
  }

  /** Whether the Redis connection is up (for `portaria_redis_connected{role="limits"}`). */
  connected(): boolean {
    return this.#redis.status === 'ready';
  }

  takeAddress(address: string): Promise<number> | number {
    const rule = this.#config.perAddress;
    if (!rule.enabled) return 0;
    return this.#takeShared('address', `address:${address}`, this.#addressRate, rule.burst, () =>
      this.#local.takeAddress(address),
    );
  }

  takeClient(clientId: string, known: boolean): Promise<number> | number {
    const rule = this.#config.perClient;
    if (!rule.enabled) return 0;
    const bucket = `${known ? 'client-known' : 'client'}:${clientKey(clientId)}`;
    return this.#takeShared('client', bucket, this.#clientRate, rule.burst, () =>
      this.#local.takeClient(clientId, known),
    );
  }

  /** One token from the shared bucket `<prefix><bucket>` (rate per ms), or the local answer. */
  #takeShared(
    check: 'address' | 'client',
    bucket: string,
    ratePerMs: number,
    burst: number,
    local: () => number,
  ): Promise<number> | number {
    return this.#shared(
      check,
      () =>
        this.#script(
          TAKE_TOKEN,
          [`${this.#prefix}${bucket}`],
          [this.#clock.now(), ratePerMs, burst],
        ).then(Number),
      local,
    );
  }

  checkPair(clientId: string, address: string): Promise<PairCheck> | PairCheck {
    const { perClient, failedSecretBackoff: rule } = this.#config;
    if (!rule.enabled && !perClient.enabled) return UNKNOWN_PAIR;
    const local = () => this.#local.checkPair(clientId, address);
    if (!rule.enabled) {
      return this.#shared(
        'backoff',
        async () => ({
          waitMs: 0,
          known: (await this.#redis.exists(this.#knownKey(clientId, address))) === 1,
        }),
        local,
      );
    }
    return this.#shared(
      'backoff',
      async () => {
        const [waitMs, known] = (await this.#script(CHECK_PAIR, this.#pairKeys(clientId, address), [
          this.#clock.now(),
          backoffEntryKey(clientId),
          rule.forgetAfterSeconds * 1000,
        ])) as [number, number];
        return { waitMs: Number(waitMs), known: Number(known) === 1 };
      },
      local,
    );
  }

  async recordFailure(clientId: string, address: string): Promise<void> {
    const rule = this.#config.failedSecretBackoff;
    if (!rule.enabled) return;
    await this.#shared(
      'record',
      () =>
        this.#script(RECORD_FAILURE, this.#pairKeys(clientId, address), [
          this.#clock.now(),
          backoffEntryKey(clientId),
          rule.freeFailures,
          rule.baseDelayMs,
          rule.maxDelayMs,
          rule.forgetAfterSeconds * 1000,
          MAX_CLIENTS_PER_ADDRESS,
        ]),
      () => this.#local.recordFailure(clientId, address),
    );
  }

  async recordSuccess(clientId: string, address: string): Promise<void> {
    const { perClient, failedSecretBackoff } = this.#config;
    if (!perClient.enabled && !failedSecretBackoff.enabled) return;
    // The local fallback may hold failures seen while Redis was down: forget them too; and
    // it knows the pair if Redis goes away.
    this.#local.recordSuccess(clientId, address);
    await this.#shared(
      'record',
      () =>
        this.#script(RECORD_SUCCESS, this.#pairKeys(clientId, address), [
          backoffEntryKey(clientId),
          KNOWN_PAIR_MS,
        ]),
      () => undefined,
    );
  }

  async close(): Promise<void> {
    // disconnect(), not quit(): QUIT would wait for a Redis that may be gone.
    this.#redis.disconnect();
  }

  /** The address's back-off hash and the pair's known mark (KEYS of the pair scripts). */
  #pairKeys(clientId: string, address: string): string[] {
    return [`${this.#prefix}backoff:${this.#tag(address)}`, this.#knownKey(clientId, address)];
  }

  #knownKey(clientId: string, address: string): string {
    if (!this.#clustered) return `${this.#prefix}known:${pairKey(clientId, address)}`;
    // The address comes first, so its tag is the key's first `{…}`: a client id's braces
    // never decide the slot.
    return `${this.#prefix}known:${this.#tag(address)} ${clientKey(clientId)}`;
  }

  #tag(address: string): string {
    return this.#clustered ? `{${address}}` : address;
  }

  /** Runs `remote` when Redis is usable, else (or when it fails) `local`. */
  async #shared<T>(check: LimitCheck, remote: () => Promise<T>, local: () => T): Promise<T> {
    if (this.#redis.status !== 'ready') return this.#fallBack(check, local, 'not connected');
    const probe = this.#down;
    if (probe) {
      if (this.#probing || performance.now() < this.#retryAtMs) {
        return this.#fallBack(check, local, 'unusable');
      }
      this.#probing = true;
    }
    try {
      const value = await remote();
      if (this.#down) {
        this.#down = false;
        this.#hooks.stateChanged('up');
      }
      return value;
    } catch (error) {
      this.#retryAtMs = performance.now() + RETRY_AFTER_FAILURE_MS;
      return this.#fallBack(check, local, (error as Error).message);
    } finally {
      if (probe) this.#probing = false;
    }
  }

  #fallBack<T>(check: LimitCheck, local: () => T, why: string): T {
    this.#hooks.fallback(check);
    if (!this.#down) {
      this.#down = true;
      this.#hooks.stateChanged('down', why);
    }
    return local();
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
