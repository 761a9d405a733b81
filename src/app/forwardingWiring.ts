/**
 * What forwards authenticated traffic: the header policy (identity headers, trusted
 * proxies, caller headers), the HTTP forwarder with its upstream pools and the WebSocket
 * proxy, bound to the metrics. A WebSocket upgrade refused mid-handshake carries the
 * edge's challenge (`http/challenge.ts`).
 */
import { certificateHeadersRemoved } from '../config/certificateHeaders.js';
import type { Config } from '../config/types.js';
import type { EdgeChallenge } from '../http/challenge.js';
import { TrustedProxies } from '../lib/trustedProxies.js';
import type { Metrics } from '../observability/metrics.js';
import { createForwarder, type Forwarder } from '../proxy/forwarder.js';
import { createHeaderPolicy } from '../proxy/headers.js';
import { createWebSocketProxy, type WebSocketProxy } from '../proxy/webSocketProxy.js';
import type { LiveState } from './liveState.js';

export interface Forwarding {
  /** `server.trustedProxies`, which the token operation reads too (source address). */
  readonly trustedProxies: TrustedProxies;
  readonly forwarder: Forwarder;
  readonly webSockets: WebSocketProxy;
}

export interface ForwardingDeps {
  readonly state: Pick<LiveState, 'routes'>;
  readonly metrics: Metrics;
  readonly challenge: EdgeChallenge;
}

export function createForwarding(config: Config, deps: ForwardingDeps): Forwarding {
  const { metrics, challenge } = deps;
  const trustedProxies = new TrustedProxies(config.server.trustedProxies);
  const headerPolicy = createHeaderPolicy({
    identityHeaders: config.identityHeaders,
    forwardAuthorization: config.forwardAuthorization,
    trustedProxies,
    forwardCallerHeaders: config.forwardCallerHeaders,
    certificateHeaders: certificateHeadersRemoved(config.clientCertificate.header.name),
  });
  const forwarder = createForwarder({
    routesOrigins: deps.state.routes.origins,
    connections: config.upstream.connections,
    headerPolicy,
    hooks: {
      upstreamResponse: (route, ms) => metrics.upstreamResponse(route, ms / 1000),
      upstreamError: (route, kind) => metrics.upstreamError(route, kind),
    },
  });
  const webSockets = createWebSocketProxy({
    headerPolicy,
    problemTypeBase: config.problemTypeBase,
    hooks: { upstreamError: (route, kind) => metrics.upstreamError(route, kind) },
    challenge: (problem, route) => challenge.header(problem, { target: null, route }),
  });
  metrics.setWebSocketTunnelSource(() => webSockets.openTunnels());
  return { trustedProxies, forwarder, webSockets };
}
