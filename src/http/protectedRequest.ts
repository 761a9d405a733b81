/**
 * The steps of a protected request, in order. Every entry that needs a verified caller
 * runs them — an HTTP request before it is forwarded, a WebSocket upgrade before its
 * tunnel opens, and an entry that decides without forwarding — and then takes its own
 * last step. The entry has already run the framing checks and the path step (the
 * canonical target is in the scope).
 *
 *   credentials   the bearer token from `Authorization` (RFC 6750 §2.1; never the query)
 *   verification  signature, claims, revocation by jti and client (TokenVerifier)
 *   route         the route serving the path, recorded in the scope (after authentication:
 *                 the route table is not revealed to strangers, who get 401 on any path)
 *   revocation    with a stale Redis revocation list, the method class's policy (503,
 *                 logged and counted under the route)
 *   no route      404, only now: with a stale list a token revoked elsewhere gets 503 on
 *                 any path, and learns nothing of the route table either
 *   audience      the route's audience, or for our own tokens the gateway's (RFC 8707;
 *                 else 401 invalid_token)
 *   scopes        every scope the route requires (else 403 insufficient_scope)
 *
 * Synchronous up to the first I/O: a cached token goes through without a tick. Results
 * go into the request scope (principal, route); failures are thrown PortariaErrors.
 */
import type { IncomingMessage } from 'node:http';
import type { Principal } from '../domain/principal.js';
import { hasScopes } from '../domain/scope.js';
import { PortariaError } from '../errors.js';
import type { MethodClass, Metrics } from '../observability/metrics.js';
import type { CompiledRoute, RouteTable } from '../proxy/routeTable.js';
import { bearerToken, WWW_AUTHENTICATE_INVALID } from '../verify/parseAuthorization.js';
import type { TokenVerifier } from '../verify/tokenVerifier.js';
import type { RequestScope } from './requestScope.js';

export interface ProtectedRequestDeps {
  readonly verifier: TokenVerifier;
  /**
   * The gateway's `audience`: our own tokens must carry it on a route naming no audience
   * (a token issued for a route's resource is valid there only, RFC 8707).
   */
  readonly ownAudience: string;
  /** The current route table (replaced on reload). */
  readonly routes: () => RouteTable;
  readonly metrics: Metrics;
  /**
   * Revocation freshness (Redis store): while `isStale()`, a request of a method class
   * whose policy is `refuse` gets 503 `service-unavailable`. Known revocations are
   * enforced before this, stale or not. Absent: never refused.
   */
  readonly revocationFreshness?: {
    readonly isStale: () => boolean;
    readonly refuse: Readonly<Record<MethodClass, boolean>>;
  };
}

export class ProtectedRequest {
  readonly #deps: ProtectedRequestDeps;
  readonly #ownAudience: readonly string[];
  /** `revocationFreshness.isStale`, or null when no method class is ever refused. */
  readonly #revocationStale: (() => boolean) | null;

  constructor(deps: ProtectedRequestDeps) {
    this.#deps = deps;
    this.#ownAudience = [deps.ownAudience];
    const fresh = deps.revocationFreshness;
    this.#revocationStale =
      fresh !== undefined && (fresh.refuse.safe || fresh.refuse.unsafe) ? fresh.isStale : null;
  }

  /** Runs the steps; fills `scope.principal` and `scope.route`, or throws. */
  admit(req: IncomingMessage, scope: RequestScope, kind: MethodClass): void | Promise<void> {
    const principal = this.#verify(req, scope);
    if (principal instanceof Promise) {
      return principal.then((verified) => this.#authorise(scope, verified, kind));
    }
    this.#authorise(scope, principal, kind);
    return undefined;
  }

  /** credentials → verification. */
  #verify(req: IncomingMessage, scope: RequestScope): Principal | Promise<Principal> {
    const search = scope.target?.search ?? '';
    const token = bearerToken(req.headers.authorization, scope.authorizationLines, search);
    const trace = scope.trace;
    if (trace === null || !trace.recording) return this.#deps.verifier.verify(token);
    return trace.verify(() => this.#deps.verifier.verify(token));
  }

  /** route → revocation policy → no route → audience → scopes. */
  #authorise(scope: RequestScope, principal: Principal, kind: MethodClass): void {
    scope.principal = principal;
    scope.clientId = principal.clientId;
    // Before any refusal: a 503 or a 403 is logged and counted under the route it was for.
    const route = this.#deps.routes().match(scope.target?.path ?? '');
    if (route !== null) {
      scope.route = route;
      scope.routeId = route.id;
    }
    if (this.#revocationStale?.() === true) this.#refuseWhenStale(kind);
    if (route === null) {
      throw new PortariaError('not-found', 'No route serves this path.', { reason: 'no-route' });
    }
    if (route.audiences.length > 0) checkAudiences(route.audiences, principal);
    else if (principal.issuerId === 'self') checkAudiences(this.#ownAudience, principal);
    checkScopes(route, principal);
  }

  /** The revocation list is stale: throws 503 when the method class's policy refuses. */
  #refuseWhenStale(kind: MethodClass): void {
    if (this.#deps.revocationFreshness?.refuse[kind] !== true) return;
    this.#deps.metrics.revocationStaleRefusal(kind);
    throw new PortariaError(
      'service-unavailable',
      'The revocation list cannot be confirmed as current; retry later.',
      { reason: 'revocation-stale' },
    );
  }
}

/**
 * A token issued for another resource is not valid here (RFC 8707 §2, RFC 9068 §4): the
 * token's `aud` must name every audience required, else 401 invalid_token.
 */
function checkAudiences(audiences: readonly string[], principal: Principal): void {
  const aud = principal.claims.aud;
  for (const audience of audiences) {
    if (aud === audience || (Array.isArray(aud) && aud.includes(audience))) continue;
    throw new PortariaError('token-invalid', 'The access token is not valid for this resource.', {
      reason: 'audience-not-allowed',
      headers: { 'www-authenticate': WWW_AUTHENTICATE_INVALID },
    });
  }
}

/** The token must carry every scope the route requires: else 403 insufficient_scope. */
function checkScopes(route: CompiledRoute, principal: Principal): void {
  if (hasScopes(principal.scopes, route.scopes)) return;
  const needed = route.scopes.join(' ');
  throw new PortariaError(
    'insufficient-scope',
    'The access token lacks a scope this route requires.',
    {
      reason: 'insufficient-scope',
      headers: {
        'www-authenticate': `Bearer realm="portaria", error="insufficient_scope", scope="${needed}"`,
      },
    },
  );
}
