/**
 * The replay store of one process: a `Map` from (client, jti) to the moment the entry may
 * be forgotten, bounded at `maxEntries` (`oauth.replayStoreMaxEntries`). When full,
 * expired entries are swept — at most once a second, a sweep reading every entry — and
 * if it is still full, a new `jti` is refused (503) rather than an entry still guarding
 * against a replay being dropped; the first refusal of each such episode is reported
 * (`onFull`), not every request's.
 *
 * What it must hold: each DPoP proof's `jti` for twice `dpop.proofWindowSeconds`
 * (RFC 9449 §11.1), each client assertion's until its `exp` plus the clock skew. At the
 * default 60 s window the default 500 000 entries cover ~4 100 DPoP proofs a second
 * sustained per process group (~830 at the longest window, 300 s). An entry costs
 * ~110–120 bytes of heap (measured with 10⁶ entries: the 43-character key, the expiry, the
 * Map's slot), so the default caps it at ~60 MB. Replicas do not share it: use `redis`
 * with several.
 */
import type { Config } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import {
  type AssertionReplayStore,
  replayKey,
  replayStoreUnavailable,
} from './assertionReplayStore.js';

export const DEFAULT_MAX_ENTRIES = 500_000;

/** A full store sweeps no more often than this: a sweep reads every entry. */
const SWEEP_INTERVAL_MS = 1000;

export class LocalReplayStore implements AssertionReplayStore {
  readonly #seen = new Map<string, number>();
  readonly #clock: Clock;
  readonly #maxEntries: number;
  readonly #onFull: ((maxEntries: number) => void) | undefined;
  #sweptAt = Number.NEGATIVE_INFINITY;
  #refusing = false;

  /** `onFull`: called when the store starts refusing, once until it accepts again. */
  constructor(
    clock: Clock,
    maxEntries = DEFAULT_MAX_ENTRIES,
    onFull?: (maxEntries: number) => void,
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError('maxEntries must be a positive integer');
    }
    this.#clock = clock;
    this.#maxEntries = maxEntries;
    this.#onFull = onFull;
  }

  get size(): number {
    return this.#seen.size;
  }

  claim(clientId: string, jti: string, untilMs: number): boolean {
    const key = replayKey(clientId, jti);
    const now = this.#clock.now();
    const until = this.#seen.get(key);
    if (until !== undefined && until > now) return false;
    if (until === undefined && this.#seen.size >= this.#maxEntries) {
      if (now - this.#sweptAt >= SWEEP_INTERVAL_MS) this.#sweep(now);
      if (this.#seen.size >= this.#maxEntries) {
        if (!this.#refusing) {
          this.#refusing = true;
          this.#onFull?.(this.#maxEntries);
        }
        throw replayStoreUnavailable();
      }
    }
    this.#refusing = false;
    this.#seen.set(key, untilMs);
    return true;
  }

  #sweep(now: number): void {
    this.#sweptAt = now;
    for (const [key, until] of this.#seen) if (until <= now) this.#seen.delete(key);
  }

  close(): Promise<void> {
    this.#seen.clear();
    return Promise.resolve();
  }
}

/** The store at `oauth.replayStoreMaxEntries`; full, it logs so once per episode, not per request. */
export function localReplayStore(
  config: Pick<Config, 'oauth'>,
  clock: Clock,
  logger: { warn(detail: object, message: string): void },
): LocalReplayStore {
  return new LocalReplayStore(clock, config.oauth.replayStoreMaxEntries, (maxEntries) =>
    logger.warn(
      { maxEntries },
      'oauth replay store full: new client assertions and DPoP proofs are refused (503) until entries expire; raise oauth.replayStoreMaxEntries or use redis',
    ),
  );
}
