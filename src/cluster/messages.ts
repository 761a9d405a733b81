/**
 * The messages between the primary and its workers over node:cluster's IPC channel (JSON).
 * Every one carries `portaria` (its kind), so messages of node:cluster itself or of a
 * library are told apart and ignored. `id` pairs a question with its answer.
 */
import type { QuotaPolicy } from '../limits/quotaPolicy.js';
import type { RevocationRecord } from '../revocation/revocationLogRecord.js';

/**
 * The limiter calls a worker forwards to the primary (`limits/limiter.ts`); `take` names
 * its family, `[family name, key]`, the others `[subject, address]`.
 */
export type LimiterMethod = 'take' | 'checkBackoff' | 'recordFailure' | 'recordSuccess';

/** The meter calls a worker forwards to the primary (`limits/meter.ts`, `cluster/ipcMeter.ts`). */
export type MeterMethod = 'check' | 'peek' | 'reset';

/** Worker → primary. */
export type WorkerMessage =
  /** Asks for the revocation list; from the answer on, every revocation is sent to it. */
  | { readonly portaria: 'hello'; readonly id: number }
  | { readonly portaria: 'listening'; readonly publicUrl: string }
  /** Log output: whole lines, written by the primary as they come. */
  | { readonly portaria: 'log'; readonly chunk: string }
  | {
      readonly portaria: 'limit';
      readonly id: number;
      readonly method: LimiterMethod;
      readonly args: readonly [string, string];
    }
  /**
   * A quota meter call: the policy travels whole (as compiled from the worker's config),
   * so a policy added or changed by a reload needs nothing of the primary.
   */
  | {
      readonly portaria: 'quota';
      readonly id: number;
      readonly method: MeterMethod;
      readonly policy: QuotaPolicy;
      readonly key: string;
    }
  /** A client assertion's `jti` claimed in the primary's replay store (`oauth.replayStore: local`). */
  | {
      readonly portaria: 'replay';
      readonly id: number;
      readonly clientId: string;
      readonly jti: string;
      readonly untilMs: number;
    }
  /** A revocation made in a worker (App.revoke): stored and fanned out by the primary. */
  | { readonly portaria: 'revoke'; readonly id: number; readonly record: RevocationRecord }
  /** The answer to a primary's question (`query`, `revocation` with an id). */
  | { readonly portaria: 'answer'; readonly id: number; readonly value: unknown };

/** Primary → worker. */
export type PrimaryMessage =
  | { readonly portaria: 'revocation'; readonly record: RevocationRecord; readonly id?: number }
  /** Redis revocation store: when the primary's list was last known current (epoch ms). */
  | { readonly portaria: 'revocation-sync'; readonly syncedAtMs: number | null }
  | { readonly portaria: 'query'; readonly id: number; readonly what: 'metrics' | 'readiness' }
  | { readonly portaria: 'reload' }
  | { readonly portaria: 'shutdown' }
  /** The answer to a worker's question (`hello`, `limit`, `quota`, `replay`, `revoke`). */
  | { readonly portaria: 'answer'; readonly id: number; readonly value: unknown };

/** The answer to `hello`. */
export interface RevocationSnapshot {
  readonly records: readonly RevocationRecord[];
  readonly syncedAtMs: number | null;
}

export function isPortariaMessage<T extends { portaria: string }>(message: unknown): message is T {
  return (
    typeof message === 'object' &&
    message !== null &&
    typeof (message as { portaria?: unknown }).portaria === 'string'
  );
}
