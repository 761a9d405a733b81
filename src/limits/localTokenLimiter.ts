/**
 * Token limits kept in this process: a token bucket per source address, two per client id
 * (one for unknown addresses, one for the client's known pairs; see `tokenLimiter.ts`),
 * the known pairs, and the failed-secret back-off per address (`LocalBackoffs`). Each
 * kind holds at most `maxTrackedKeys` entries (least recently seen forgotten first).
 *
 * Forgetting is harmless for buckets (a forgotten bucket comes back full, which is what
 * an idle one would be), bounded for the back-off (see `localBackoffs.ts`), and for a
 * known pair costs only its standing: it draws from the unknown addresses' bucket again
 * until its next token (marks are made only by accepted credentials, so only legitimate
 * traffic can push them out). No timers: refill and expiry are computed from the
 * injected clock on access, eviction happens on insert.
 */
import type { TokenLimitsConfig } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { BoundedMap } from './boundedMap.js';
import { backoffEntryKey, clientKey, pairKey } from './limitKeys.js';
import { LocalBackoffs } from './localBackoffs.js';
import { type BucketRule, type BucketState, fullBucket, takeToken } from './tokenBucket.js';
import { KNOWN_PAIR_MS, type PairCheck, type TokenLimiter, UNKNOWN_PAIR } from './tokenLimiter.js';

export class LocalTokenLimiter implements TokenLimiter {
  readonly #config: TokenLimitsConfig;
  readonly #clock: Clock;
  readonly #addresses: BoundedMap<BucketState> | null;
  readonly #clients: BoundedMap<BucketState> | null;
  readonly #knownClients: BoundedMap<BucketState> | null;
  /** Pair → clock time of its last accepted credentials. */
  readonly #known: BoundedMap<number> | null;
  readonly #backoffs: LocalBackoffs | null;

  constructor(config: TokenLimitsConfig, clock: Clock) {
    this.#config = config;
    this.#clock = clock;
    const max = config.maxTrackedKeys;
    const { perAddress, perClient, failedSecretBackoff } = config;
    this.#addresses = perAddress.enabled ? new BoundedMap(max) : null;
    this.#clients = perClient.enabled ? new BoundedMap(max) : null;
    this.#knownClients = perClient.enabled ? new BoundedMap(max) : null;
    this.#known = perClient.enabled || failedSecretBackoff.enabled ? new BoundedMap(max) : null;
    this.#backoffs = failedSecretBackoff.enabled
      ? new LocalBackoffs(max, failedSecretBackoff)
      : null;
  }

  takeAddress(address: string): number {
    if (this.#addresses === null) return 0;
    return take(this.#addresses, address, this.#config.perAddress, this.#clock.now());
  }

  checkPair(clientId: string, address: string): PairCheck {
    if (this.#known === null) return UNKNOWN_PAIR;
    const now = this.#clock.now();
    const known = this.#isKnown(clientId, address, now);
    const waitMs = this.#backoffs?.waitMs(backoffEntryKey(clientId), address, known, now) ?? 0;
    return waitMs === 0 && !known ? UNKNOWN_PAIR : { waitMs, known };
  }

  takeClient(clientId: string, known: boolean): number {
    const buckets = known ? this.#knownClients : this.#clients;
    if (buckets === null) return 0;
    return take(buckets, clientKey(clientId), this.#config.perClient, this.#clock.now());
  }

  recordFailure(clientId: string, address: string): void {
    if (this.#backoffs === null) return;
    const now = this.#clock.now();
    const known = this.#isKnown(clientId, address, now);
    this.#backoffs.recordFailure(backoffEntryKey(clientId), address, known, now);
  }

  recordSuccess(clientId: string, address: string): void {
    this.#backoffs?.recordSuccess(backoffEntryKey(clientId), address);
    this.#known?.set(pairKey(clientId, address), this.#clock.now());
  }

  async close(): Promise<void> {}

  #isKnown(clientId: string, address: string, nowMs: number): boolean {
    const since = this.#known?.get(pairKey(clientId, address));
    return since !== undefined && nowMs - since < KNOWN_PAIR_MS;
  }
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
