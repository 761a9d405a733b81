/**
 * The 429 a token-endpoint limit answers: problem details `too-many-requests` with the
 * limit's private reason and public detail, and `Retry-After` in whole seconds, rounded
 * up, at least 1 (RFC 9110 §10.2.3; RFC 6585 §4). `onLimited` counts the refusal.
 */
import { PortariaError } from '../errors.js';

/** Which limit refused a request (a bounded metric label). */
export type LimitReason = 'address' | 'client' | 'backoff';

const LIMITED = {
  address: {
    reason: 'rate-limit-address',
    detail:
      'Too many token requests from this address; try again after the seconds given in Retry-After.',
  },
  client: {
    reason: 'rate-limit-client',
    detail:
      'Too many token requests for this client; try again after the seconds given in Retry-After.',
  },
  backoff: {
    reason: 'failed-secret-backoff',
    detail:
      'Too many failed attempts for this client from this address; try again after the seconds given in Retry-After.',
  },
} as const satisfies Record<LimitReason, { reason: string; detail: string }>;

export interface LimitRefusals {
  /** A request refused by a token limit. */
  readonly onLimited: (reason: LimitReason) => void;
}

/** Throws the 429 when a limit answered a wait (`waitMs` > 0). */
export function refuseIfWaiting(waitMs: number, limit: LimitReason, deps: LimitRefusals): void {
  if (waitMs <= 0) return;
  deps.onLimited(limit);
  const { reason, detail } = LIMITED[limit];
  throw new PortariaError('too-many-requests', detail, {
    reason,
    headers: { 'retry-after': String(Math.max(1, Math.ceil(waitMs / 1000))) },
  });
}
