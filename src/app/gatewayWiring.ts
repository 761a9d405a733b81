/**
 * The public listener's handler: the token operation, the OAuth endpoints and discovery,
 * the JWKS and OpenAPI documents, and the protected-request path over the verifier, the
 * live routes and the forwarders; with the Redis revocation store (or a worker's mirror
 * of it), the `revocation.whenStale` policy; with `clientCertificate.source: tls`, the
 * connections' client certificates (an unverified one logged once per connection).
 */
import type { CertificateHeaderReader } from '../certificates/certificateHeaderReader.js';
import type { Config } from '../config/types.js';
import type { OAuthDiscovery } from '../documents/oauthDiscovery.js';
import { openApiDocumentFor } from '../documents/openApiDocument.js';
import { StaticDocument } from '../documents/staticDocument.js';
import type { EdgeChallenge } from '../http/challenge.js';
import type { OAuthRoutes } from '../http/oauthRoutes.js';
import { PublicGateway, type PublicGatewayDeps } from '../http/publicGateway.js';
import type { TokenRouteDeps } from '../http/tokenRoute.js';
import type { Clock } from '../lib/clock.js';
import type { AccessLog, Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { ClientRequiresBinding } from '../pipeline/certificateBinding.js';
import type { DpopStepDeps, ProofReplay } from '../pipeline/dpopProofStep.js';
import type { QuotaStepDeps } from '../pipeline/quotaStep.js';
import { PeerCertificates } from '../tls/peerCertificate.js';
import type { DpopNonces } from '../verify/dpopNonces.js';
import type { TokenVerifier } from '../verify/tokenVerifier.js';
import type { Forwarding } from './forwardingWiring.js';
import type { LiveState } from './liveState.js';

/** The DPoP step's parts with `dpop.enabled` (the replay store is the assertions'); else undefined. */
export function dpopStepDeps(
  config: Config,
  clock: Clock,
  replay: ProofReplay | null,
  nonces: DpopNonces | null,
): DpopStepDeps | undefined {
  if (!config.dpop.enabled) return undefined;
  if (replay === null) throw new Error('dpop.enabled without a replay store');
  return {
    algorithms: config.dpop.algorithms,
    windowSeconds: config.dpop.proofWindowSeconds,
    replay,
    clock,
    nonces,
  };
}

export interface GatewayWiringDeps {
  /** With `dpop.enabled`: the DPoP step's parts (`dpopStepDeps`). */
  readonly dpop?: DpopStepDeps | undefined;
  /** With quota policies: the quota step's parts (`quotaWiring.ts`). */
  readonly quota?: QuotaStepDeps | undefined;
  readonly state: LiveState;
  readonly tokenRoute: TokenRouteDeps;
  readonly oauth: OAuthRoutes;
  readonly discovery: OAuthDiscovery | undefined;
  readonly challenge: EdgeChallenge;
  readonly verifier: TokenVerifier;
  readonly forwarding: Forwarding;
  readonly logger: Logger;
  readonly access: AccessLog;
  readonly metrics: Metrics;
  readonly tracing: Tracing | null;
  /** The Redis revocation list's staleness (a worker: its primary's); null with another store. */
  readonly freshness: { isStale(): boolean } | null;
  /** With `clientCertificate.source: header`: the proxy's certificate header reader. */
  readonly certificateHeader?: CertificateHeaderReader | undefined;
}

export function createGateway(config: Config, deps: GatewayWiringDeps): PublicGateway {
  const { state, discovery, freshness } = deps;
  return new PublicGateway({
    config,
    tokenRoute: deps.tokenRoute,
    oauth: deps.oauth,
    jwks: new StaticDocument(
      () => state.keyRing.jwksJson(),
      `public, max-age=${config.keys.jwksMaxAgeSeconds}`,
    ),
    openapi: StaticDocument.of(
      openApiDocumentFor(config.token.responseFields, config.oauth.enabled ? config.oauth : null),
      'public, max-age=3600',
    ),
    ...(discovery === undefined ? {} : { discovery }),
    challenge: deps.challenge,
    verifier: deps.verifier,
    routes: () => state.routes,
    ...clientPolicies(state),
    forwarder: deps.forwarding.forwarder,
    webSockets: deps.forwarding.webSockets,
    logger: deps.logger,
    accessLogger: deps.access,
    metrics: deps.metrics,
    draining: () => state.draining,
    graceOver: () => state.graceOver,
    tracing: deps.tracing,
    ...(config.clientCertificate.source === 'tls'
      ? {
          certificates: new PeerCertificates((verdict, opensslError) =>
            deps.logger.info({ verdict, opensslError }, 'client certificate not verified'),
          ),
        }
      : {}),
    ...(deps.certificateHeader === undefined ? {} : { certificateHeader: deps.certificateHeader }),
    forwards: config.mode !== 'authorizer',
    ...(deps.dpop === undefined ? {} : { dpop: deps.dpop }),
    ...(deps.quota === undefined
      ? {}
      : { quota: deps.quota, rateLimitFieldsAlways: config.quotas.headers === 'always' }),
    ...(freshness === null
      ? {}
      : { revocationFreshness: revocationFreshnessOf(config, freshness) }),
  });
}

/** What the live clients file requires of its clients' tokens, for the binding steps. */
export function clientPolicies(state: Pick<LiveState, 'clients'>): {
  clientRequiresBinding: ClientRequiresBinding;
  clientRequiresSenderConstrained: ClientRequiresBinding;
} {
  return {
    clientRequiresBinding: (clientId) =>
      state.clients.get(clientId)?.requireCertificateBound === true,
    clientRequiresSenderConstrained: (clientId) =>
      state.clients.get(clientId)?.requireSenderConstrained === true,
  };
}

/** The `revocation.whenStale` policy over the Redis list's staleness; undefined: no such list. */
export function revocationFreshnessOf(
  config: Config,
  freshness: { isStale(): boolean } | null,
): PublicGatewayDeps['revocationFreshness'] {
  if (freshness === null) return undefined;
  return {
    isStale: () => freshness.isStale(),
    refuse: {
      safe: config.revocation.whenStale.safe === 'refuse',
      unsafe: config.revocation.whenStale.unsafe === 'refuse',
    },
  };
}
