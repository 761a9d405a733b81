/**
 * A meter holds the counters of the quota policies (`quotaPolicy.ts`) per key: `check`
 * consumes one request when every part of the policy has room and answers the reading
 * the RateLimit fields are made of; `peek` reads without consuming (`portaria quota
 * show`); `reset` forgets one key's counters (the caller enumerates the keys it knows).
 *
 * A key is given by the caller, already bounded (subject, and route when the policy is
 * per route); a meter stores it as given. Implementations: `LocalMeter` (values, never
 * promises), `RedisMeter` (shared by every replica), and a worker's `IpcMeter` (asks the
 * primary's `LocalMeter`). A meter whose store cannot answer says so (`unavailable`) and
 * never throws or hangs: the caller fails open or closed as configured.
 */
import type { MeterReading, QuotaPolicy } from './quotaPolicy.js';

export type ReadingAnswer = MeterReading | Promise<MeterReading>;

export interface Meter {
  /** Consumes one request from `key`'s counters when every part has room. */
  check(policy: QuotaPolicy, key: string): ReadingAnswer;
  /** The reading a check would start from; consumes nothing. */
  peek(policy: QuotaPolicy, key: string): ReadingAnswer;
  /** Forgets `key`'s counters for `policy`: its bucket is full and its window unused. */
  reset(policy: QuotaPolicy, key: string): void | Promise<void>;
  close(): Promise<void>;
}
