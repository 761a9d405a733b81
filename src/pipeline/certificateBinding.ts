/**
 * The certificate-binding steps of RFC 8705 §3:
 *
 *   certificate binding   a token carrying `cnf: {"x5t#S256": …}` passes only with the
 *                         very certificate it names, presented on this request (the TLS
 *                         connection's, or the trusted proxy's header): the thumbprints
 *                         are compared, whoever issued the token. It runs on every request:
 *                         the verified-token cache keeps the verification, never this.
 *   binding required      a plain bearer token where the route or, for our own tokens, the
 *                         client requires bound ones (`requireCertificateBound`).
 *
 * The thumbprint is computed once per connection or header value (the certificate
 * carries it); a request compares two strings. A matching certificate that has since
 * expired or been revoked (its verdict) no longer carries its tokens. An untrusted or
 * self-signed verdict does: the binding was proven at issuance (§2.2 accepts a
 * certificate no CA issued), and a TLS peer holds the certificate's key.
 */
import type { ClientCertificate } from '../domain/clientCertificate.js';
import type { Principal } from '../domain/principal.js';
import { PortariaError } from '../errors.js';
import type { CompiledRoute } from '../proxy/routeTable.js';
import type { AccessRequest } from './accessRequest.js';
import type { Step } from './runSteps.js';

type ProtectedStep = Step<AccessRequest>;

/** base64url of a SHA-256: 43 characters, no padding (RFC 8705 §3.1). */
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

/**
 * The `x5t#S256` a token is bound to, or undefined for one without it. Throws for a
 * `cnf` that is not an object, or an `x5t#S256` that is not a thumbprint.
 */
export function boundThumbprintOf(principal: Principal): string | undefined {
  const cnf = principal.claims.cnf;
  if (cnf === undefined) return undefined;
  if (cnf === null || typeof cnf !== 'object' || Array.isArray(cnf)) throw bindingFailed('bad-cnf');
  const thumbprint = (cnf as Record<string, unknown>)['x5t#S256'];
  if (thumbprint === undefined) return undefined;
  if (typeof thumbprint !== 'string' || !THUMBPRINT.test(thumbprint)) {
    throw bindingFailed('bad-cnf');
  }
  return thumbprint;
}

export const certificateBinding: ProtectedStep = {
  name: 'certificate binding',
  run(request) {
    const principal = request.principal as Principal;
    if (principal.claims.cnf === undefined) return;
    const bound = boundThumbprintOf(principal);
    if (bound === undefined) return;
    requireCertificate(bound, request.certificate);
    request.bound = true;
  },
};

function requireCertificate(bound: string, certificate: ClientCertificate | null): void {
  if (certificate === null) throw bindingFailed('bound-no-certificate');
  if (certificate.thumbprint !== bound) throw bindingFailed('certificate-mismatch');
  const verdict = certificate.verdict;
  if (verdict === 'expired' || verdict === 'not-yet-valid' || verdict === 'revoked') {
    throw bindingFailed('bound-certificate-invalid');
  }
}

function bindingFailed(reason: PortariaError['reason']): PortariaError {
  return new PortariaError(
    'token-binding-failed',
    'The access token is bound to a client certificate this request did not present.',
    { reason },
  );
}

/** Whether our own client requires bound tokens (the clients file, as now). */
export type ClientRequiresBinding = (clientId: string) => boolean;

export function bindingRequired(
  clientRequiresBinding: ClientRequiresBinding,
  clientRequiresSenderConstrained: ClientRequiresBinding = () => false,
): ProtectedStep {
  return {
    name: 'binding required',
    run(request) {
      if (request.bound) return;
      const principal = request.principal as Principal;
      const route = request.route as CompiledRoute;
      if (
        route.requireCertificateBound ||
        (principal.issuerId === 'self' && clientRequiresBinding(principal.clientId))
      ) {
        throw new PortariaError(
          'token-binding-required',
          'This resource accepts only access tokens bound to a client certificate.',
          { reason: 'not-bound' },
        );
      }
      // Sender-constrained: bound to the certificate presented, or to the proof's key.
      if (request.proven) return;
      if (
        route.requireSenderConstrained ||
        (principal.issuerId === 'self' && clientRequiresSenderConstrained(principal.clientId))
      ) {
        throw new PortariaError(
          'token-binding-required',
          'This resource accepts only sender-constrained access tokens (DPoP or certificate-bound).',
          { reason: 'not-sender-constrained' },
        );
      }
    },
  };
}
