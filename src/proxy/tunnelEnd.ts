/**
 * Why the gateway ends a WebSocket tunnel whose token is over, what it reports of it, and
 * the 401 an upgrade still in its handshake gets instead (RFC 6750 §3.1).
 */
import { PortariaError } from '../errors.js';

/** Why a tunnel was closed by the gateway (a bounded metric label). */
export type TunnelEnd = 'token_expired' | 'token_revoked';

/** A tunnel the gateway closed: who it was, and why. */
export interface ClosedTunnel {
  readonly requestId: string;
  readonly routeId: string;
  readonly clientId: string;
  readonly reason: TunnelEnd;
}

/** The refusal the verifier would give now to an upgrade whose token ended mid-handshake. */
export function endedProblem(reason: TunnelEnd): PortariaError {
  // Same code, detail and reason as verify/ (proxy may not import it); the entry's
  // challenge follows from the code.
  return reason === 'token_revoked'
    ? new PortariaError('token-revoked', 'The access token has been revoked.', {
        reason: 'revoked',
      })
    : new PortariaError('token-expired', 'The access token has expired.', { reason: 'expired' });
}
