/**
 * The gateway's timers:
 * - every minute, the revocation store drops entries whose tokens have expired;
 * - every second, WebSocket tunnels whose token is revoked (always) or past exp + skew
 *   (`server.closeWebSocketsAtTokenExpiry`) are closed, each logged and counted;
 * - every second, a change of our published key set by the clock alone (a scheduled
 *   publishAt or removeAt passing) empties the verified-token cache: a key that left it
 *   must not keep verifying through the cache. `jwksJson()` is one string instance per
 *   schedule segment, so the check is an identity test.
 * The per-second timer keeps running through the drain: a token revoked during the grace
 * still closes its tunnel within a second.
 */
import type { Config } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { ACCESS_BOUNDS, ACCESS_FIELDS, boundedText } from '../observability/accessLine.js';
import type { AccessLog } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { WebSocketProxy } from '../proxy/webSocketProxy.js';
import type { RevocationStore } from '../revocation/revocationStore.js';
import type { VerifiedTokenCache } from '../verify/verifiedTokenCache.js';
import type { LiveState } from './liveState.js';

export interface Housekeeping {
  /** Stops the revocation sweep (the drain begins). */
  stopSweep(): void;
  /** Stops every timer (the tunnels are closed). */
  stop(): void;
}

export interface HousekeepingDeps {
  readonly config: Config;
  readonly clock: Clock;
  readonly state: Pick<LiveState, 'keyRing'>;
  readonly revocation: RevocationStore;
  readonly cache: VerifiedTokenCache;
  readonly webSockets: WebSocketProxy;
  readonly metrics: Metrics;
  readonly access: AccessLog;
}

export function startHousekeeping(deps: HousekeepingDeps): Housekeeping {
  const { config, clock, state, revocation, cache, webSockets, metrics, access } = deps;
  const sweep = setInterval(() => void revocation.sweep(), 60_000);
  sweep.unref();

  const skewOf = new Map<string, number>([
    ['self', config.clockSkewSeconds],
    ...config.issuers.map((i): [string, number] => [i.id, i.clockSkewSeconds]),
  ]);
  const closeAtExpiry = config.server.closeWebSocketsAtTokenExpiry;
  const closeEndedTunnels = () => {
    const nowSeconds = clock.now() / 1000;
    const closed = webSockets.closeEnded((principal) => {
      if (revocation.isRevoked(principal)) return 'token_revoked';
      const skew = skewOf.get(principal.issuerId) ?? config.clockSkewSeconds;
      return closeAtExpiry && principal.expiresAt + skew <= nowSeconds ? 'token_expired' : null;
    });
    for (const tunnel of closed) {
      metrics.webSocketClosed(tunnel.reason);
      access.logger.info(
        {
          [ACCESS_FIELDS.requestId]: tunnel.requestId,
          [ACCESS_FIELDS.route]: tunnel.routeId,
          [ACCESS_FIELDS.clientId]: boundedText(tunnel.clientId, ACCESS_BOUNDS.clientId),
          [ACCESS_FIELDS.reason]: tunnel.reason,
        },
        'websocket closed',
      );
    }
  };
  let publishedKeys = state.keyRing.jwksJson();
  const followKeySchedule = () => {
    const now = state.keyRing.jwksJson();
    if (now === publishedKeys) return;
    publishedKeys = now;
    cache.clear();
  };
  const everySecond = setInterval(() => {
    closeEndedTunnels();
    followKeySchedule();
  }, 1000);
  everySecond.unref();
  return {
    stopSweep: () => clearInterval(sweep),
    stop() {
      clearInterval(sweep);
      clearInterval(everySecond);
    },
  };
}
