/**
 * The decision every entry asks for (`decisionGateway.ts` over HTTP, `grpcCheck.ts` over
 * gRPC): the protected steps of the pipeline — the same list, in the same order, as a
 * forwarded request runs (`pipeline/protectedSteps.ts`) — over the original request, and
 * what an allow answer hands the proxy:
 *   - the identity headers to set on the request it forwards (`proxy/identityHeaders.ts`);
 *   - the reserved names to remove from it: every identity name this answer does not set,
 *     and the `_` spellings the original request carried, so no caller-chosen value
 *     reaches an upstream under an identity name (the proxy mode's rule);
 *   - whether the proxy may cache the decision: off by default; when on,
 *     `private, max-age=N` with N at most `authorizer.cacheDecisions.maxAgeSeconds` and
 *     never past the token's `exp` (docs/authorizer.md#cacheable-decisions). A refusal is
 *     never cacheable (the entries write `no-store`), nor is a metered request's allow
 *     (each request must be counted);
 *   - with `quotas.headers: always`, a metered request's `RateLimit` and `RateLimit-Policy`
 *     for the proxy to add to the client's answer (the upstream's).
 */
import type { AuthorizerConfig } from '../config/types.js';
import type { Principal } from '../domain/principal.js';
import type { EdgeChallenge } from '../http/challenge.js';
import { RequestAccounting } from '../http/requestAccounting.js';
import { type Clock, epochSeconds } from '../lib/clock.js';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import type { AccessLog, Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { AccessRequest } from '../pipeline/accessRequest.js';
import type { ProtectedStep } from '../pipeline/protectedSteps.js';
import { answerFields } from '../pipeline/quotaStep.js';
import { runSteps } from '../pipeline/runSteps.js';
import type { IdentityHeaders } from '../proxy/identityHeaders.js';

export const NO_STORE = 'no-store';

/** What every decision entry (HTTP, gRPC) is built with. */
export interface DecisionEntryDeps {
  readonly maxHeaderLines: number;
  readonly problemTypeBase: string;
  readonly decisions: Decisions;
  readonly trustedProxies: TrustedProxies;
  readonly challenge: EdgeChallenge;
  readonly logger: Logger;
  readonly accessLogger: AccessLog;
  readonly metrics: Metrics;
  readonly tracing: Tracing | null;
  /** `dpop.enabled`: the original request's `DPoP` proof and origin are read. */
  readonly dpop?: boolean;
}

export interface DecisionsDeps {
  readonly steps: readonly ProtectedStep[];
  readonly identity: IdentityHeaders;
  readonly cache: AuthorizerConfig['cacheDecisions'];
  readonly clock: Clock;
  /** `quotas.headers: always`: an allow carries the metered request's RateLimit fields. */
  readonly rateLimitFieldsOnAllow?: boolean;
}

/** The access lines, metrics and spans of an entry's decisions. */
export function decisionAccounting(deps: DecisionEntryDeps): RequestAccounting {
  return new RequestAccounting({
    logger: deps.logger,
    accessLogger: deps.accessLogger,
    metrics: deps.metrics,
    trustedProxies: deps.trustedProxies,
    tracing: deps.tracing,
  });
}

export class Decisions {
  readonly #steps: readonly ProtectedStep[];
  readonly #identity: IdentityHeaders;
  readonly #maxAge: number;
  readonly #clock: Clock;
  readonly #fieldsOnAllow: boolean;

  constructor(deps: DecisionsDeps) {
    this.#steps = deps.steps;
    this.#identity = deps.identity;
    this.#maxAge = deps.cache.enabled ? deps.cache.maxAgeSeconds : 0;
    this.#clock = deps.clock;
    this.#fieldsOnAllow = deps.rateLimitFieldsOnAllow === true;
  }

  /** The protected steps over the original request; a refusal is thrown as a PortariaError. */
  decide(request: AccessRequest): void | Promise<void> {
    return runSteps(this.#steps, request);
  }

  /** `[name, value, …]`: the identity headers an allowed request gets. */
  identityHeaders(request: AccessRequest): string[] {
    const out: string[] = [];
    this.#identity.write(out, request.principal as Principal, request.certificate);
    return out as string[];
  }

  /** `[name, value, …]`: the RateLimit fields an allowed metered request's answer gets. */
  rateLimitHeaders(request: AccessRequest): string[] {
    if (!this.#fieldsOnAllow || request.quota === null) return [];
    const fields = answerFields(request);
    return fields === null ? [] : ['ratelimit-policy', fields.policy, 'ratelimit', fields.limit];
  }

  /**
   * The reserved names the proxy removes: those `set` (a `[name, value, …]` list) does not
   * carry, then each of `present` (the original request's header names, lower case) that
   * is reserved under another spelling.
   */
  headersToRemove(set: readonly string[], present: Iterable<string>): string[] {
    const out: string[] = [];
    for (const name of this.#identity.reserved) if (!hasName(set, name)) out.push(name);
    for (const name of present) {
      if (name.includes('_') && this.#identity.isReserved(name)) out.push(name);
    }
    return out;
  }

  /** How long the proxy may keep this allow decision, in whole seconds; 0: not at all. */
  cacheSeconds(request: AccessRequest): number {
    // A metered request is counted when it is asked: a cached allow would go uncounted.
    if (this.#maxAge === 0 || request.quota !== null) return 0;
    const left = (request.principal as Principal).expiresAt - epochSeconds(this.#clock);
    return Math.max(0, Math.min(this.#maxAge, Math.floor(left)));
  }
}

/** An allow answer's `Cache-Control`: `no-store`, or `private, max-age=N`. */
export function cacheControlFor(seconds: number): string {
  return seconds >= 1 ? `private, max-age=${seconds}` : NO_STORE;
}

function hasName(list: readonly string[], name: string): boolean {
  for (let i = 0; i < list.length; i += 2) if (list[i] === name) return true;
  return false;
}
