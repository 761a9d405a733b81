/**
 * The replay store every replica shares: `SET <prefix>oauth:jti:<key> 1 NX PX <ms>` is one
 * atomic claim, so of two replicas receiving the same assertion at once exactly one
 * succeeds. Redis unreachable or failing: 503 (fail closed; a local answer would let an
 * assertion be replayed once per replica). Entries expire by themselves (`PX`).
 */

import type { Clock } from '../lib/clock.js';
import type { RedisClient } from '../redis/redisClient.js';
import { quitWithin } from '../redis/redisClient.js';
import {
  type AssertionReplayStore,
  replayKey,
  replayStoreUnavailable,
} from './assertionReplayStore.js';

export class RedisReplayStore implements AssertionReplayStore {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #clock: Clock;
  readonly #closeWithinMs: number;

  constructor(redis: RedisClient, keyPrefix: string, clock: Clock, closeWithinMs = 1000) {
    this.#redis = redis;
    this.#prefix = `${keyPrefix}oauth:jti:`;
    this.#clock = clock;
    this.#closeWithinMs = closeWithinMs;
  }

  connected(): boolean {
    return this.#redis.status === 'ready';
  }

  async claim(clientId: string, jti: string, untilMs: number): Promise<boolean> {
    const ttlMs = Math.max(1, Math.ceil(untilMs - this.#clock.now()));
    let answer: string | null;
    try {
      answer = await this.#redis.set(
        this.#prefix + replayKey(clientId, jti),
        '1',
        'PX',
        ttlMs,
        'NX',
      );
    } catch {
      throw replayStoreUnavailable();
    }
    return answer === 'OK';
  }

  close(): Promise<void> {
    return quitWithin(this.#redis, this.#closeWithinMs);
  }
}
