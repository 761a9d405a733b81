/**
 * What the Redis revocation store is given (`RedisRevocationStore.open`), what it reports
 * to readiness (`state()`), and the error a revocation it could not store raises.
 */
import type { RedisConfig } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import type { RevocationRecord } from './revocationLogRecord.js';

export type RedisRole = 'revocation' | 'revocation-subscriber';
export type StoreLog = (
  level: 'info' | 'warn' | 'error',
  event: string,
  detail: Record<string, unknown>,
) => void;

export interface RedisRevocationStoreOptions {
  readonly redis: RedisConfig;
  readonly clock: Clock;
  readonly maxSyncLagSeconds: number;
  readonly whileRedisDown: 'queue' | 'refuse';
  readonly queueFile: string;
  readonly log?: StoreLog;
  /** Every entry applied to the in-memory list, whatever its source (a group's workers mirror it). */
  readonly onApplied?: (record: RevocationRecord) => void;
  /** A full synchronisation ended (metrics). */
  readonly onSync?: (outcome: 'ok' | 'error') => void;
  /** Heartbeat and retry period; default min(1000, maxSyncLagSeconds × 250) ms. */
  readonly heartbeatMs?: number;
  /** How long `open` waits for the first full load; default `redis.connectTimeoutMs`. */
  readonly startWaitMs?: number;
}

export interface RedisRevocationState {
  /** A full load has succeeded once. */
  readonly loaded: boolean;
  /** The list is kept current now (subscribed, loaded since the last reconnection). */
  readonly synced: boolean;
  /** Seconds since the last synchronisation; null before the first. */
  readonly syncAgeSeconds: number | null;
  readonly stale: boolean;
  /** Revocations waiting in the queue file for Redis. */
  readonly queued: number;
  readonly connected: Readonly<Record<RedisRole, boolean>>;
}

/** Thrown (and turned into 503 by the admin API) when a revocation cannot be stored. */
export class RevocationNotStored extends Error {
  override readonly name = 'RevocationNotStored';
}
