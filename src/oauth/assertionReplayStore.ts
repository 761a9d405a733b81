/**
 * Single use of a client assertion's `jti` (RFC 7523 §3 item 7, OpenID Connect Core §9):
 * a `jti` is claimed once, until the moment its assertion could no longer be accepted
 * (its `exp` plus the clock skew); a second claim within that time is a replay.
 *
 * Two stores: `LocalReplayStore` (this process, bounded) and `RedisReplayStore` (one
 * `SET NX PX` shared by every replica). Both fail closed: a store that cannot tell
 * (full, or Redis unreachable) answers 503, never "not seen".
 */
import { hash } from 'node:crypto';
import type { Config } from '../config/types.js';
import { PortariaError } from '../errors.js';

/**
 * Whether the gateway keeps a replay store: client assertions at the OAuth endpoints,
 * and DPoP proofs (their `jti`, RFC 9449 §11.1) under a key space of their own.
 */
export function usesReplayStore(config: Pick<Config, 'oauth' | 'dpop'>): boolean {
  return config.oauth.enabled || config.dpop.enabled;
}

export interface AssertionReplayStore {
  /**
   * Records `jti` of `clientId` until `untilMs` (epoch ms). True when it was not recorded
   * yet (the assertion may be used), false for a replay. Throws a 503 `PortariaError`
   * when the store cannot answer.
   */
  claim(clientId: string, jti: string, untilMs: number): boolean | Promise<boolean>;
  close(): Promise<void>;
}

/** One fixed-length key per (client, jti): neither is ours to bound, and the pair is unambiguous. */
export function replayKey(clientId: string, jti: string): string {
  return hash('sha256', `${clientId.length}:${clientId}\u0000${jti}`, 'base64url');
}

export function replayStoreUnavailable(): PortariaError {
  return new PortariaError(
    'service-unavailable',
    'Client assertions cannot be checked for replay at the moment; try again shortly.',
    { reason: 'replay-store-unavailable', headers: { 'retry-after': '1' } },
  );
}
