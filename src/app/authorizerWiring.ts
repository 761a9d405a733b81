/**
 * Authorizer mode (`mode: authorizer` or `both`): the decision core over the protected
 * steps — the same list the public gateway runs, bound to the same verifier, routes,
 * client policy and revocation freshness — and its listeners: HTTP on `authorizer.port`
 * (nginx, Traefik, Envoy over HTTP) and, with `authorizer.grpc.enabled`, Envoy's gRPC
 * `ext_authz` on `authorizer.grpc.port`. Null in `mode: proxy`.
 */
import type { Server } from 'node:http';
import { DecisionGateway } from '../authorizer/decisionGateway.js';
import { Decisions } from '../authorizer/decisions.js';
import { CERTIFICATE_FIELD, GrpcCheck } from '../authorizer/grpcCheck.js';
import { createGrpcListener, type GrpcListener } from '../authorizer/grpcListener.js';
import { CertificateHeaderReader } from '../certificates/certificateHeaderReader.js';
import type { CertificateTrust } from '../certificates/certificateTrust.js';
import type { Config } from '../config/types.js';
import type { EdgeChallenge } from '../http/challenge.js';
import type { Clock } from '../lib/clock.js';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import type { AccessLog, Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { DpopStepDeps } from '../pipeline/dpopProofStep.js';
import { protectedSteps } from '../pipeline/protectedSteps.js';
import type { QuotaStepDeps } from '../pipeline/quotaStep.js';
import { compileIdentityHeaders } from '../proxy/identityHeaders.js';
import type { TokenVerifier } from '../verify/tokenVerifier.js';
import { clientPolicies, revocationFreshnessOf } from './gatewayWiring.js';
import type { LiveState } from './liveState.js';
import { createDecisionListener, listenOn, urlOf } from './servers.js';

export interface AuthorizerWiringDeps {
  /** With `dpop.enabled`: the DPoP step's parts. */
  readonly dpop?: DpopStepDeps | undefined;
  /** With quota policies: the quota step's parts (the same meter as the public listener's). */
  readonly quota?: QuotaStepDeps | undefined;
  readonly clock: Clock;
  readonly state: LiveState;
  readonly verifier: TokenVerifier;
  readonly challenge: EdgeChallenge;
  readonly trustedProxies: TrustedProxies;
  readonly logger: Logger;
  readonly access: AccessLog;
  readonly metrics: Metrics;
  readonly tracing: Tracing | null;
  readonly freshness: { isStale(): boolean } | null;
  readonly certificateHeader?: CertificateHeaderReader | undefined;
  /**
   * With `clientCertificate.source: header`: the CA and CRL files the proxy's certificates
   * are checked against (the gRPC entry's `attributes.source.certificate` too).
   */
  readonly certificateTrust?: CertificateTrust | undefined;
}

export interface Authorizer {
  /** Listens on the decision ports; resolves with their URLs (`grpcUrl` '' when off). */
  listen(): Promise<{ authorizerUrl: string; grpcUrl: string }>;
  /** Stops accepting, lets decisions in flight finish within `graceMs`, then cuts the rest. */
  close(graceMs: number): Promise<void>;
}

export function createAuthorizer(config: Config, deps: AuthorizerWiringDeps): Authorizer | null {
  if (config.mode === 'proxy') return null;
  const { state, metrics } = deps;
  const revocationFreshness = revocationFreshnessOf(config, deps.freshness);
  const decisions = new Decisions({
    steps: protectedSteps({
      verifier: deps.verifier,
      ownAudience: config.audience,
      routes: () => state.routes,
      ...clientPolicies(state),
      onStaleRefusal: (kind) => metrics.revocationStaleRefusal(kind),
      ...(revocationFreshness === undefined ? {} : { revocationFreshness }),
      ...(deps.dpop === undefined ? {} : { dpop: deps.dpop }),
      ...(deps.quota === undefined ? {} : { quota: deps.quota }),
    }),
    identity: compileIdentityHeaders(config.identityHeaders),
    cache: config.authorizer.cacheDecisions,
    clock: deps.clock,
    rateLimitFieldsOnAllow: config.quotas.headers === 'always',
  });
  const gateway = new DecisionGateway({
    authorizer: config.authorizer,
    maxHeaderLines: config.server.maxHeaderLines,
    problemTypeBase: config.problemTypeBase,
    decisions,
    trustedProxies: deps.trustedProxies,
    challenge: deps.challenge,
    logger: deps.logger,
    accessLogger: deps.access,
    metrics,
    tracing: deps.tracing,
    draining: () => state.draining,
    interactionId: config.profile === 'fapi-br',
    dpop: deps.dpop !== undefined,
    ...(deps.certificateHeader === undefined ? {} : { certificateHeader: deps.certificateHeader }),
  });
  const http: Server = createDecisionListener(config, gateway.handleRequest as never);
  const grpc = grpcListenerOf(config, deps, decisions);
  const { host, port } = config.authorizer;
  return {
    async listen() {
      await listenOn(http, host, port, 'authorizer');
      const grpcUrl = grpc === null ? '' : await grpc.listen().catch(closingFirst(http));
      return { authorizerUrl: urlOf(http), grpcUrl };
    },
    async close(graceMs) {
      const closed = new Promise<void>((resolve) => http.close(() => resolve()));
      http.closeIdleConnections();
      const grace = setTimeout(() => http.closeAllConnections(), graceMs);
      await Promise.all([closed, grpc?.close(graceMs)]);
      clearTimeout(grace);
      await gateway.responsesClosed();
    },
  };
}

/** With `authorizer.grpc.enabled`: Envoy's gRPC `ext_authz` over the same decisions. */
function grpcListenerOf(
  config: Config,
  deps: AuthorizerWiringDeps,
  decisions: Decisions,
): GrpcListener | null {
  if (!config.authorizer.grpc.enabled) return null;
  const trust = deps.certificateTrust;
  const certificate =
    config.clientCertificate.source === 'header' && trust !== undefined
      ? // Envoy's `include_peer_certificate`: URL-encoded PEM, nginx's form.
        new CertificateHeaderReader({
          format: 'nginx',
          name: CERTIFICATE_FIELD,
          trust,
          clock: deps.clock,
        })
      : null;
  const check = new GrpcCheck({
    maxHeaderLines: config.server.maxHeaderLines,
    problemTypeBase: config.problemTypeBase,
    decisions,
    trustedProxies: deps.trustedProxies,
    challenge: deps.challenge,
    logger: deps.logger,
    accessLogger: deps.access,
    metrics: deps.metrics,
    tracing: deps.tracing,
    certificate,
    dpop: deps.dpop !== undefined,
  });
  return createGrpcListener({
    host: config.authorizer.host,
    port: config.authorizer.grpc.port,
    maxHeaderBytes: config.server.maxHeaderBytes,
    check,
    draining: () => deps.state.draining,
  });
}

/** A failed gRPC bind closes the HTTP decision listener already bound, then fails start-up. */
function closingFirst(http: Server): (error: unknown) => never {
  return (error) => {
    http.close();
    throw error;
  };
}
