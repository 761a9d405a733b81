/**
 * The bearer-token verifier over every trusted issuer: ours (keys from the live key ring,
 * audiences from the live routes) and each external issuer's key set, with its cache and
 * the revocation list, reporting to the metrics (and tracing); and the one the
 * introspection and revocation endpoints use, which takes our own tokens whatever their
 * audience (a token for an RFC 8707 resource is still ours to describe and revoke).
 */
import type { Config } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import type { Metrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { RouteTable } from '../proxy/routeTable.js';
import type { RevocationStore } from '../revocation/revocationStore.js';
import { TokenVerifier } from '../verify/tokenVerifier.js';
import { buildIssuerTable } from '../verify/trustedIssuer.js';
import { VerifiedTokenCache } from '../verify/verifiedTokenCache.js';
import type { IssuerSet } from './issuerKeySets.js';
import type { LiveState } from './liveState.js';
import { cacheLookupHook, tracedRevocationCheck } from './tracingWiring.js';

export interface VerifierDeps {
  readonly clock: Clock;
  readonly state: Pick<LiveState, 'keyRing' | 'routes'>;
  readonly issuerSets: readonly IssuerSet[];
  readonly cache: VerifiedTokenCache;
  readonly revocation: RevocationStore;
  readonly metrics: Metrics;
  readonly tracing: Tracing | null;
}

export function createVerifier(config: Config, deps: VerifierDeps): TokenVerifier {
  const { state, metrics } = deps;
  return new TokenVerifier({
    issuers: buildIssuerTable(
      config,
      () => state.keyRing,
      deps.issuerSets,
      () => ownAudiences(config.audience, state.routes),
    ),
    clock: deps.clock,
    cache: deps.cache,
    revocation: tracedRevocationCheck(deps.revocation, deps.tracing),
    hooks: {
      cacheLookup: cacheLookupHook(metrics, deps.tracing),
      verified: (issuer, seconds, age) => metrics.tokenVerified(issuer, seconds, age),
      verifyFailed: (issuer, reason, seconds) => metrics.tokenVerifyFailed(issuer, reason, seconds),
    },
  });
}

/**
 * The introspection and revocation endpoints' verifier: as the edge's, but our own tokens
 * pass whatever their `aud` (RFC 7662 §2.2, RFC 7009 §2.1 concern the issuer's tokens,
 * not one resource's). It has no cache: an entry would skip the audience check, and the
 * edge's cache must never hold a token the edge would refuse.
 */
export function createOwnTokensVerifier(
  config: Config,
  deps: Omit<VerifierDeps, 'cache'>,
): TokenVerifier {
  const { state, metrics } = deps;
  return new TokenVerifier({
    issuers: buildIssuerTable(config, () => state.keyRing, deps.issuerSets, 'any'),
    clock: deps.clock,
    cache: new VerifiedTokenCache(0, deps.clock),
    revocation: tracedRevocationCheck(deps.revocation, deps.tracing),
    hooks: {
      verified: (issuer, seconds, age) => metrics.tokenVerified(issuer, seconds, age),
      verifyFailed: (issuer, reason, seconds) => metrics.tokenVerifyFailed(issuer, reason, seconds),
    },
  });
}

const audiencesByTable = new WeakMap<RouteTable, readonly string[]>();

/** Our tokens' accepted audiences: the gateway's, and each route's (RFC 8707). */
function ownAudiences(audience: string, table: RouteTable): readonly string[] {
  let audiences = audiencesByTable.get(table);
  if (audiences === undefined) {
    audiences = [...new Set([audience, ...table.routes.flatMap((route) => route.audiences)])];
    audiencesByTable.set(table, audiences);
  }
  return audiences;
}
