/**
 * Keyed limits, for whichever caller needs them: token buckets grouped in named families,
 * and a failure back-off per (subject, source address) pair. Each call answers 0 (go on)
 * or the milliseconds the caller must wait (it answers 429 with `Retry-After`); nothing
 * waits on a timer. Which families exist and what a subject is belong to the caller: the
 * token endpoints compose three families and the back-off (`tokenEndpointLimits.ts`); a
 * per-partner quota is one more family.
 *
 * A family is a value built at start (`bucketFamily`): `name` is its key namespace (the
 * Redis key `<prefix>limits:<name>:<key>`, and the name a worker sends the primary), so
 * two families with one name share their buckets; `label` is the bounded metric label of
 * a take answered locally while Redis is unusable. A bucket key must already be bounded
 * (`limitKeys.ts`): the limiter stores it as given. A back-off subject may be any string
 * (a client-chosen id): the limiter bounds it.
 *
 * The back-off is not a family: its entries live per source address, at most
 * `MAX_CLIENTS_PER_ADDRESS` subjects on their own (`addressBackoff.ts`), and a pair that
 * succeeded within `KNOWN_PAIR_MS` is *known*, which the caller may use to pick a bucket
 * that failures sprayed from other addresses cannot drain.
 *
 * Implementations: `LocalLimiter` (answers values, never promises, so a caller awaits
 * nothing with local limits), `RedisLimiter`, `NO_LIMITS`, and a worker's `IpcLimiter`
 * (`cluster/`).
 */
import type { BackoffRule } from './failedSecretBackoff.js';
import type { BucketRule } from './tokenBucket.js';

export type WaitMs = number | Promise<number>;

/** How long a pair stays known after its last success. */
export const KNOWN_PAIR_MS = 48 * 3600 * 1000;

export interface BucketFamily<Label extends string = string> {
  /** The key namespace: letters, digits and `-` (never `backoff` or `known`, the back-off's). */
  readonly name: string;
  readonly rule: BucketRule;
  /** The metric label of a fallback (bounded: fixed at start). */
  readonly label: Label;
}

const FAMILY_NAME = /^[a-z0-9-]+$/;
const BACKOFF_NAMESPACES = new Set(['backoff', 'known']);

/** A family; throws on a name that could collide with another namespace (a programming error). */
export function bucketFamily<Label extends string>(
  name: string,
  rule: BucketRule,
  label: Label,
): BucketFamily<Label> {
  if (!FAMILY_NAME.test(name) || BACKOFF_NAMESPACES.has(name)) {
    throw new Error(`invalid bucket family name: ${name}`);
  }
  const { ratePerSecond, burst } = rule;
  return Object.freeze({ name, rule: Object.freeze({ ratePerSecond, burst }), label });
}

export interface PairCheck {
  /** Milliseconds the pair must still wait after failures (0: none). */
  readonly waitMs: number;
  /** The pair succeeded within `KNOWN_PAIR_MS`. */
  readonly known: boolean;
}

export const UNKNOWN_PAIR: PairCheck = Object.freeze({ waitMs: 0, known: false });

/** What a limiter tracks besides its families. */
export interface LimiterSettings {
  /** Per family, for the known pairs and for the back-off: the most entries kept in one process. */
  readonly maxTrackedKeys: number;
  /** The failure back-off; null: failures are not recorded and nothing waits. */
  readonly backoff: BackoffRule | null;
  /** Whether successes make pairs known; the back-off always tracks them (it reads them). */
  readonly knownPairs: boolean;
}

/** Whether a limiter with `settings` remembers known pairs. */
export function tracksKnownPairs(settings: LimiterSettings): boolean {
  return settings.knownPairs || settings.backoff !== null;
}

export interface Limiter<Label extends string = string> {
  /** One token from `family`'s bucket for `key`. */
  take(family: BucketFamily<Label>, key: string): WaitMs;
  /** Whether (subject, address) still waits after failures, and whether it is known; takes nothing. */
  checkBackoff(subject: string, address: string): PairCheck | Promise<PairCheck>;
  /** A refusal of `subject`'s credentials from `address`. */
  recordFailure(subject: string, address: string): void | Promise<void>;
  /** Accepted credentials: the pair's failures are forgotten and it is known. */
  recordSuccess(subject: string, address: string): void | Promise<void>;
  /** Releases connections (Redis); the local limiter holds none. */
  close(): Promise<void>;
}
