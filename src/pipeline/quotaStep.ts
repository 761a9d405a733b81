/**
 * The quota step (docs/quotas.md), last of the protected steps: the partner is known and
 * every other check passed, so a request refused here is one the partner would otherwise
 * have been served, and nothing of it has reached the upstream.
 *
 *   policy   the client's own (`quota` in the clients file, our clients only) over the
 *            route's (`quota` of the route or `upstream.default`); none: not metered
 *   subject  the token's client id, or the policy's `claim` (a token without that claim
 *            is metered under its client id); with `per: client-route`, and the route
 *   check    one request taken from the meter (`limits/meter.ts`: local, the primary's
 *            over IPC, or one Lua script in Redis): refused → 429 `quota-exceeded` with
 *            `Retry-After` (RFC 9110 §10.2.3) and the RateLimit fields; the store cannot
 *            answer → `quotas.whenRedisDown`: through (counted) or 503
 *
 * The reading stays on the request: the entry adds the RateLimit fields to the answer
 * (`quotas.headers: always`), the access line and the span name the decision.
 */
import { createHash } from 'node:crypto';
import type { Principal } from '../domain/principal.js';
import { PortariaError } from '../errors.js';
import type { Meter } from '../limits/meter.js';
import type { MeterReading, QuotaPolicy } from '../limits/quotaPolicy.js';
import { type RateLimitFields, rateLimitFields } from '../limits/rateLimitFields.js';
import type { CompiledRoute } from '../proxy/routeTable.js';
import type { AccessRequest } from './accessRequest.js';
import type { MeteringPolicy, QuotaOutcome } from './meteringPolicies.js';
import type { Step } from './runSteps.js';

export interface QuotaStepDeps {
  readonly meter: Meter;
  /** The current policies by name (replaced when the configuration reloads). */
  readonly policies: () => ReadonlyMap<string, MeteringPolicy>;
  /** Our client's own policy name (the clients file's `quota`), if it has one. */
  readonly clientQuota: (clientId: string) => string | undefined;
  readonly whenStoreDown: 'open' | 'closed';
  /** Whether a 429 carries the RateLimit fields (`quotas.headers` is not `off`). */
  readonly fieldsOnRefusal: boolean;
  readonly onDecision: (policy: string, route: string, outcome: QuotaOutcome) => void;
}

/** A subject that needs no escaping in a Redis key or an IPC message; longer or odder ones are hashed. */
const PLAIN_SUBJECT = /^[A-Za-z0-9._:@-]{1,128}$/;

/** The meter key of `subject` (bounded: 128 characters at most), per route or not. */
export function meterKey(subject: string, routeId: string | null): string {
  const bounded = PLAIN_SUBJECT.test(subject)
    ? subject
    : `#${createHash('sha256').update(subject).digest('base64url')}`;
  return routeId === null ? bounded : `${bounded}/${routeId}`;
}

/** The partner a policy meters for `principal`: its `claim` when a string or number, else the client id. */
export function subjectOf(principal: Principal, claim: string | null): string {
  if (claim === null) return principal.clientId;
  const value = principal.claims[claim];
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return principal.clientId;
}

export function quotaStep(deps: QuotaStepDeps): Step<AccessRequest> {
  const { meter, policies, clientQuota, whenStoreDown, fieldsOnRefusal, onDecision } = deps;
  const decide = (request: AccessRequest, policy: QuotaPolicy, reading: MeterReading): void => {
    const routeId = request.routeId;
    // A second ask is the same request again: counted once, at its first ask.
    const record = !request.secondAsk;
    if (reading.unavailable === true) {
      if (whenStoreDown === 'open') {
        request.quota = { policy, outcome: 'unavailable-open', reading: null };
        if (record) onDecision(policy.name, routeId, 'unavailable-open');
        return;
      }
      request.quota = { policy, outcome: 'unavailable-closed', reading: null };
      if (record) onDecision(policy.name, routeId, 'unavailable-closed');
      throw new PortariaError(
        'service-unavailable',
        'The request quota cannot be checked now; retry later.',
        { reason: 'quota-store-unavailable', headers: { 'retry-after': '1' } },
      );
    }
    if (reading.allowed) {
      request.quota = { policy, outcome: 'allowed', reading };
      if (record) onDecision(policy.name, routeId, 'allowed');
      return;
    }
    request.quota = { policy, outcome: 'refused', reading };
    if (record) onDecision(policy.name, routeId, 'refused');
    throw quotaExceeded(policy, reading, fieldsOnRefusal);
  };
  return {
    name: 'quota',
    run(request) {
      const principal = request.principal as Principal;
      const route = request.route as CompiledRoute;
      const own = principal.issuerId === 'self' ? clientQuota(principal.clientId) : undefined;
      const all = policies();
      // Names are checked when the configuration and the clients file load; a client's
      // policy dropped by a later reload leaves it under the route's.
      const metering =
        (own === undefined ? undefined : all.get(own)) ??
        (route.quota === null ? undefined : all.get(route.quota));
      if (metering === undefined) return undefined;
      const key = meterKey(
        subjectOf(principal, metering.claim),
        metering.perRoute ? route.id : null,
      );
      // A second ask counts nothing: it reads where the partner stands.
      const reading = request.secondAsk
        ? meter.peek(metering.policy, key)
        : meter.check(metering.policy, key);
      if (reading instanceof Promise) {
        return reading.then((answer) => decide(request, metering.policy, answer));
      }
      decide(request, metering.policy, reading);
      return undefined;
    },
  };
}

/**
 * The RateLimit fields of an allowed metered request's answer (`quotas.headers: always`),
 * from the reading the step left on it; null when it was not metered or the store could
 * not answer. Proxy mode adds them to the upstream's answer, the decision entries hand
 * them to the proxy for the client's.
 */
export function answerFields(request: Pick<AccessRequest, 'quota'>): RateLimitFields | null {
  const decision = request.quota;
  if (decision === null || decision.reading === null) return null;
  return rateLimitFields(decision.policy, decision.reading);
}

/** 429 (RFC 6585 §4) with `Retry-After` in whole seconds (at least 1) and, unless off, the fields. */
function quotaExceeded(
  policy: QuotaPolicy,
  reading: MeterReading,
  withFields: boolean,
): PortariaError {
  const headers: Record<string, string> = {
    'retry-after': String(Math.max(1, Math.ceil(reading.retryAfterMs / 1000))),
  };
  const fields = withFields ? rateLimitFields(policy, reading) : null;
  if (fields !== null) {
    headers['ratelimit-policy'] = fields.policy;
    headers.ratelimit = fields.limit;
  }
  const windowSpent = reading.quota !== null && reading.quota.remaining === 0;
  return new PortariaError(
    'quota-exceeded',
    windowSpent
      ? `The request quota of policy ${policy.name} is used up for this window.`
      : `The request rate of policy ${policy.name} is exceeded.`,
    { reason: windowSpent ? 'quota-window' : 'quota-rate', headers },
  );
}
