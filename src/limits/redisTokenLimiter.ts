/**
 * Token limits shared by every replica through Redis: the same three checks as
 * `LocalTokenLimiter`, each one atomic in Redis (a Lua script run by EVALSHA, sent again
 * as EVAL when Redis does not know it; the back-off check and the reset are single
 * commands). Keys live under `<redis.keyPrefix>limits:` and carry TTLs (see
 * `limitScripts.ts`), so nothing stays behind.
 *
 * When Redis cannot be used (not connected, an error, a command timeout) the check is
 * answered by a local limiter instead, and counted (`fallback` hook): a token request is
 * never refused or failed because of Redis. While it lasts each replica enforces the
 * limits on its own (so a fleet of N admits up to N times a limit), and failures are
 * remembered only by the replica that saw them. The connection is never waited for:
 * commands do not queue while it is down (see `redis/redisClient.ts`), so a fallback
 * costs nothing when it is known to be down, and at most `redis.commandTimeoutMs` when
 * it goes down mid-command. A Redis that hangs with its connection still open (stopped
 * process, black-holed path) would cost that timeout on every command; so after a failure
 * Redis is left alone for `RETRY_AFTER_FAILURE_MS` — every check answered locally at once
 * — and then tried by one check at a time until one succeeds.
 */
import type { RedisConfig, TokenLimitsConfig } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import type { RedisClient } from '../redis/redisClient.js';
import { clientKey, pairKey } from './limitKeys.js';
import { type LuaScript, RECORD_FAILURE, TAKE_TOKEN } from './limitScripts.js';
import type { LocalTokenLimiter } from './localTokenLimiter.js';
import type { TokenLimiter } from './tokenLimiter.js';

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
    return this.#takeShared('address', address, this.#addressRate, rule.burst, () =>
      this.#local.takeAddress(address),
    );
  }

  takeClient(clientId: string): Promise<number> | number {
    const rule = this.#config.perClient;
    if (!rule.enabled) return 0;
    return this.#takeShared('client', clientKey(clientId), this.#clientRate, rule.burst, () =>
      this.#local.takeClient(clientId),
    );
  }

  /** One token from the shared bucket `<prefix><kind>:<key>` (rate per ms), or the local answer. */
  #takeShared(
    kind: 'address' | 'client',
    key: string,
    ratePerMs: number,
    burst: number,
    local: () => number,
  ): Promise<number> | number {
    return this.#shared(
      kind,
      () =>
        this.#script(TAKE_TOKEN, `${this.#prefix}${kind}:${key}`, [
          this.#clock.now(),
          ratePerMs,
          burst,
        ]).then(Number),
      local,
    );
  }

  backoffWait(clientId: string, address: string): Promise<number> | number {
    if (!this.#config.failedSecretBackoff.enabled) return 0;
    return this.#shared(
      'backoff',
      async () => {
        const until = Number(
          (await this.#redis.hget(this.#pairKey(clientId, address), 'b')) ?? '0',
        );
        const now = this.#clock.now();
        return until > now ? Math.ceil(until - now) : 0;
      },
      () => this.#local.backoffWait(clientId, address),
    );
  }

  async recordFailure(clientId: string, address: string): Promise<void> {
    const rule = this.#config.failedSecretBackoff;
    if (!rule.enabled) return;
    await this.#shared(
      'record',
      () =>
        this.#script(RECORD_FAILURE, this.#pairKey(clientId, address), [
          this.#clock.now(),
          rule.freeFailures,
          rule.baseDelayMs,
          rule.maxDelayMs,
          rule.forgetAfterSeconds * 1000,
        ]),
      () => this.#local.recordFailure(clientId, address),
    );
  }

  async recordSuccess(clientId: string, address: string): Promise<void> {
    if (!this.#config.failedSecretBackoff.enabled) return;
    // The local fallback may hold failures seen while Redis was down: forget them too.
    this.#local.recordSuccess(clientId, address);
    await this.#shared(
      'record',
      () => this.#redis.del(this.#pairKey(clientId, address)),
      () => undefined,
    );
  }

  async close(): Promise<void> {
    // disconnect(), not quit(): QUIT would wait for a Redis that may be gone.
    this.#redis.disconnect();
  }

  #pairKey(clientId: string, address: string): string {
    return `${this.#prefix}backoff:${pairKey(clientId, address)}`;
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
  async #script(script: LuaScript, key: string, args: readonly number[]): Promise<unknown> {
    const argv = args.map(String);
    try {
      return await this.#redis.evalsha(script.sha1, 1, key, ...argv);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return this.#redis.eval(script.source, 1, key, ...argv);
    }
  }
}
