/**
 * The steps of a protected request, in order: one list, shared by every entry that needs
 * a verified caller (an HTTP request before it is forwarded, a WebSocket upgrade before
 * its tunnel opens, a decision without forwarding). The entry has run its opening steps
 * (framing, singleton fields, path) and built the `AccessRequest`; after the list it
 * takes its own last step (forward, tunnel, answer).
 *
 *   credentials    the access token from `Authorization` (RFC 6750 §2.1; never the query)
 *   verification   signature, claims, revocation by jti and client (TokenVerifier)
 *   certificate binding  a `cnf.x5t#S256` token only with that certificate, cached or
 *                  not (RFC 8705 §3; certificateBinding.ts)
 *   dpop proof     a `cnf.jkt` token only with the DPoP scheme and a fresh, single-use
 *                  proof of its key for this request, cached or not (RFC 9449 §7.1;
 *                  dpopProofStep.ts); with DPoP off, such a token is refused
 *   route          the route serving the path (after authentication: the route table is
 *                  not revealed to strangers, who get 401 on any path)
 *   freshness      with a stale Redis revocation list, the method class's policy (503,
 *                  counted under the route)
 *   route found    404, only now: with a stale list a token revoked elsewhere gets 503 on
 *                  any path, and learns nothing of the route table either
 *   audience       the route's audience, or for our own tokens the gateway's (RFC 8707;
 *                  else 401 invalid_token)
 *   binding required  a bearer token where the route or the client requires bound ones,
 *                  or sender-constrained ones (certificate- or DPoP-bound; 401 invalid_token)
 *   scopes         every scope the route requires (else 403 insufficient_scope)
 *   quota          with quota policies: the partner's rate and quota on this route (429
 *                  quota-exceeded; quotaStep.ts), last, so only a request that would be
 *                  served is counted, and before any upstream work
 *
 * A new check is a new step and one line in the list. Failures are thrown PortariaErrors;
 * the entry writes them, and the challenge, from their code (`http/challenge.ts`).
 */
import type { Principal } from '../domain/principal.js';
import { hasScopes } from '../domain/scope.js';
import { PortariaError } from '../errors.js';
import type { MethodClass } from '../observability/metrics.js';
import type { CompiledRoute, RouteTable } from '../proxy/routeTable.js';
import type { TokenVerifier } from '../verify/tokenVerifier.js';
import type { AccessRequest } from './accessRequest.js';
import {
  bindingRequired,
  type ClientRequiresBinding,
  certificateBinding,
} from './certificateBinding.js';
import { credentials } from './credentials.js';
import { type DpopStepDeps, dpopOff, dpopProofStep } from './dpopProofStep.js';
import { type QuotaStepDeps, quotaStep } from './quotaStep.js';
import type { Step } from './runSteps.js';

export interface ProtectedStepsDeps {
  readonly verifier: Pick<TokenVerifier, 'verify'>;
  /**
   * The gateway's `audience`: our own tokens must carry it on a route naming no audience
   * (a token issued for a route's resource is valid there only, RFC 8707).
   */
  readonly ownAudience: string;
  /** The current route table (replaced on reload). */
  readonly routes: () => RouteTable;
  /**
   * Revocation freshness (Redis store): while `isStale()`, a request of a method class
   * whose policy is `refuse` gets 503 `service-unavailable`. Known revocations are
   * enforced before this, stale or not. Absent: never refused.
   */
  readonly revocationFreshness?: {
    readonly isStale: () => boolean;
    readonly refuse: Readonly<Record<MethodClass, boolean>>;
  };
  /** A request refused for a stale revocation list, by method class. */
  readonly onStaleRefusal?: (kind: MethodClass) => void;
  /** Whether one of our clients requires certificate-bound tokens; absent: none does. */
  readonly clientRequiresBinding?: ClientRequiresBinding;
  /** Whether one of our clients requires sender-constrained tokens; absent: none does. */
  readonly clientRequiresSenderConstrained?: ClientRequiresBinding;
  /** With `dpop.enabled`: the DPoP scheme is accepted and its proofs checked. */
  readonly dpop?: DpopStepDeps;
  /** With quota policies configured: metered requests are counted and refused past their limit. */
  readonly quota?: QuotaStepDeps;
}

export type ProtectedStep = Step<AccessRequest>;

const NO_CLIENT_REQUIRES_BINDING: ClientRequiresBinding = () => false;

/** The list, its steps bound to their dependencies once, at start. */
export function protectedSteps(deps: ProtectedStepsDeps): readonly ProtectedStep[] {
  return [
    credentials(deps.dpop !== undefined),
    verification(deps.verifier),
    certificateBinding,
    deps.dpop === undefined ? dpopOff : dpopProofStep(deps.dpop),
    route(deps.routes),
    ...freshness(deps),
    routeFound,
    audience(deps.ownAudience),
    bindingRequired(
      deps.clientRequiresBinding ?? NO_CLIENT_REQUIRES_BINDING,
      deps.clientRequiresSenderConstrained ?? NO_CLIENT_REQUIRES_BINDING,
    ),
    scopes,
    ...(deps.quota === undefined ? [] : [quotaStep(deps.quota)]),
  ];
}

function verification(verifier: ProtectedStepsDeps['verifier']): ProtectedStep {
  const verified = (request: AccessRequest, principal: Principal): void => {
    request.principal = principal;
    request.clientId = principal.clientId;
  };
  return {
    name: 'verification',
    run(request) {
      const token = request.token;
      const trace = request.trace;
      const principal =
        trace === null || !trace.recording
          ? verifier.verify(token)
          : trace.verify(() => verifier.verify(token));
      if (principal instanceof Promise) {
        return principal.then((found) => verified(request, found));
      }
      verified(request, principal);
      return undefined;
    },
  };
}

/** Before any refusal that follows: a 503 or a 403 is logged and counted under its route. */
function route(routes: () => RouteTable): ProtectedStep {
  return {
    name: 'route',
    run(request) {
      const found = routes().match(request.target?.path ?? '');
      if (found === null) return;
      request.route = found;
      request.routeId = found.id;
    },
  };
}

/** No step at all when no method class is ever refused. */
function freshness(deps: ProtectedStepsDeps): ProtectedStep[] {
  const fresh = deps.revocationFreshness;
  if (fresh === undefined || (!fresh.refuse.safe && !fresh.refuse.unsafe)) return [];
  const { isStale, refuse } = fresh;
  return [
    {
      name: 'freshness',
      run(request) {
        if (!refuse[request.methodClass] || !isStale()) return;
        deps.onStaleRefusal?.(request.methodClass);
        throw new PortariaError(
          'service-unavailable',
          'The revocation list cannot be confirmed as current; retry later.',
          { reason: 'revocation-stale' },
        );
      },
    },
  ];
}

const routeFound: ProtectedStep = {
  name: 'route found',
  run(request) {
    if (request.route !== null) return;
    throw new PortariaError('not-found', 'No route serves this path.', { reason: 'no-route' });
  },
};

/**
 * A token issued for another resource is not valid here (RFC 8707 §2, RFC 9068 §4): the
 * token's `aud` must name every audience required, else 401 invalid_token.
 */
function audience(ownAudience: string): ProtectedStep {
  const own = [ownAudience];
  return {
    name: 'audience',
    run(request) {
      const principal = request.principal as Principal;
      const required = (request.route as CompiledRoute).audiences;
      if (required.length > 0) requireAudiences(required, principal);
      else if (principal.issuerId === 'self') requireAudiences(own, principal);
    },
  };
}

function requireAudiences(audiences: readonly string[], principal: Principal): void {
  const aud = principal.claims.aud;
  for (const needed of audiences) {
    if (aud === needed || (Array.isArray(aud) && aud.includes(needed))) continue;
    throw new PortariaError('token-invalid', 'The access token is not valid for this resource.', {
      reason: 'audience-not-allowed',
    });
  }
}

/** The token must carry every scope the route requires: else 403 insufficient_scope. */
const scopes: ProtectedStep = {
  name: 'scopes',
  run(request) {
    const principal = request.principal as Principal;
    if (hasScopes(principal.scopes, (request.route as CompiledRoute).scopes)) return;
    throw new PortariaError(
      'insufficient-scope',
      'The access token lacks a scope this route requires.',
      { reason: 'insufficient-scope' },
    );
  },
};
