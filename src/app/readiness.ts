/**
 * The whole /readyz policy. Ready: not draining, a signing key active now, every external
 * issuer with a usable key set once, the Redis revocation list loaded once.
 *
 * Later outages keep a replica ready on purpose: an issuer's key server down is answered
 * with 503 on that issuer's tokens (after its maxStalenessSeconds), and a Redis outage
 * keeps the last known list enforced with revocation.whenStale deciding; taking every
 * replica out of the load balancer would turn either into a full outage. A stale or
 * unsynchronised Redis list shows as `degraded`, and so does the client-assertion replay
 * store's Redis connection while it is down: only `private_key_jwt` clients are refused
 * then (503, fail closed), everything else works, and every replica shares that Redis.
 */
import type { IssuerKeySet } from '../issuers/issuerKeySet.js';
import type { RedisRevocationState } from '../revocation/redisRevocationStore.js';
import type { LiveState } from './liveState.js';

export interface Readiness {
  readonly ready: boolean;
  readonly reason?: string;
  readonly degraded?: string;
}

export interface ReadinessDeps {
  readonly state: Pick<LiveState, 'draining' | 'keyRing'>;
  readonly issuerSets: readonly {
    readonly config: { readonly id: string };
    readonly keys: Pick<IssuerKeySet, 'state'>;
  }[];
  /** The Redis revocation store's state; absent with another store. */
  readonly redisState?: () => RedisRevocationState;
  /** The OAuth replay store's Redis connection; absent with the local store. */
  readonly replayConnected?: () => boolean;
}

export function createReadiness(deps: ReadinessDeps): () => Readiness {
  const { state, issuerSets, redisState, replayConnected } = deps;
  const everUsable = new Set<string>();
  return () => {
    if (state.draining) return { ready: false, reason: 'shutting down' };
    try {
      void state.keyRing.signingKey;
    } catch {
      return { ready: false, reason: 'no signing key is active' };
    }
    for (const set of issuerSets) {
      if (everUsable.has(set.config.id)) continue;
      if (!set.keys.state().usable) {
        return { ready: false, reason: `issuer ${set.config.id} has no usable key set yet` };
      }
      everUsable.add(set.config.id);
    }
    let degraded: string | undefined;
    if (redisState !== undefined) {
      const redis = redisState();
      if (!redis.loaded) {
        return { ready: false, reason: 'the revocation list has not been loaded from Redis yet' };
      }
      degraded = revocationDegraded(redis);
    }
    if (replayConnected !== undefined && !replayConnected()) {
      degraded = degraded === undefined ? REPLAY_DOWN : `${degraded}; ${REPLAY_DOWN}`;
    }
    return degraded === undefined ? { ready: true } : { ready: true, degraded };
  };
}

const REPLAY_DOWN =
  'client assertion replay store: no Redis connection, private_key_jwt clients are refused';

/** Why the Redis revocation list is not current, or undefined when it is. */
export function revocationDegraded(state: RedisRevocationState): string | undefined {
  if (state.synced && !state.stale && state.queued === 0) return undefined;
  const age = Math.round(state.syncAgeSeconds ?? 0);
  const queued = state.queued > 0 ? `; ${state.queued} revocation(s) queued for Redis` : '';
  const sync = state.stale
    ? `revocation list stale: last synchronised with Redis ${age} s ago`
    : state.synced
      ? 'revocation list current'
      : `revocation list not synchronised with Redis (last synchronised ${age} s ago)`;
  return sync + queued;
}
