/**
 * Token limits kept in this process: a token bucket per source address and per client
 * id, and the failed-secret back-off per (client, address) pair, each in its own
 * `BoundedMap` of at most `maxTrackedKeys` entries (least recently seen forgotten first).
 *
 * Forgetting is harmless for buckets (a forgotten bucket comes back full, which is what
 * an idle one would be) and bounded for the back-off (an evicted pair starts over; to
 * evict one, an attacker must first make `maxTrackedKeys` newer pairs, each costing a
 * request from the per-address bucket). No timers: refill and expiry are computed from
 * the injected clock on access, eviction happens on insert.
 */
import type { TokenLimitsConfig } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { BoundedMap } from './boundedMap.js';
import { afterFailure, type BackoffState, backoffWaitMs } from './failedSecretBackoff.js';
import { clientKey, pairKey } from './limitKeys.js';
import { type BucketRule, type BucketState, fullBucket, takeToken } from './tokenBucket.js';
import type { TokenLimiter } from './tokenLimiter.js';

export class LocalTokenLimiter implements TokenLimiter {
  readonly #config: TokenLimitsConfig;
  readonly #clock: Clock;
  readonly #addresses: BoundedMap<BucketState> | null;
  readonly #clients: BoundedMap<BucketState> | null;
  readonly #pairs: BoundedMap<BackoffState> | null;

  constructor(config: TokenLimitsConfig, clock: Clock) {
    this.#config = config;
    this.#clock = clock;
    const max = config.maxTrackedKeys;
    this.#addresses = config.perAddress.enabled ? new BoundedMap(max) : null;
    this.#clients = config.perClient.enabled ? new BoundedMap(max) : null;
    this.#pairs = config.failedSecretBackoff.enabled ? new BoundedMap(max) : null;
  }

  takeAddress(address: string): number {
    if (this.#addresses === null) return 0;
    return take(this.#addresses, address, this.#config.perAddress, this.#clock.now());
  }

  takeClient(clientId: string): number {
    if (this.#clients === null) return 0;
    return take(this.#clients, clientKey(clientId), this.#config.perClient, this.#clock.now());
  }

  backoffWait(clientId: string, address: string): number {
    if (this.#pairs === null) return 0;
    return backoffWaitMs(this.#pairs.get(pairKey(clientId, address)), this.#clock.now());
  }

  recordFailure(clientId: string, address: string): void {
    if (this.#pairs === null) return;
    const key = pairKey(clientId, address);
    const rule = this.#config.failedSecretBackoff;
    this.#pairs.set(key, afterFailure(this.#pairs.get(key), rule, this.#clock.now()));
  }

  recordSuccess(clientId: string, address: string): void {
    this.#pairs?.delete(pairKey(clientId, address));
  }

  async close(): Promise<void> {}
}

function take(
  buckets: BoundedMap<BucketState>,
  key: string,
  rule: BucketRule,
  nowMs: number,
): number {
  let state = buckets.get(key);
  if (state === undefined) {
    state = fullBucket(rule, nowMs);
    buckets.set(key, state);
  }
  return takeToken(state, rule, nowMs);
}
