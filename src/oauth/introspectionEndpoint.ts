/**
 * `POST {oauth.introspectionPath}`, token introspection (RFC 7662) for resource servers:
 *
 *   client          the shared steps (`authenticatedForm.ts`): POST, form, address
 *                   limit, client authentication as at the token endpoint (401)
 *   permission      the client holds `introspect` (else 403 `unauthorized_client`)
 *   token           the `token` parameter (invalid_request when absent)
 *   verify          as the edge verifies a bearer token (`TokenVerifier`): our tokens
 *                   (whatever their audience, RFC 8707) and trusted external issuers'
 *                   alike, revocation included
 *   freshness       an active token while the Redis revocation list is stale: 503 problem
 *                   details, as the edge refuses then, and counted with its stale refusals
 *                   (RFC 7662 §4: the server must determine that no revocation took
 *                   place, and cannot; "inactive" would be a verdict it cannot give either)
 *   describe        active: the claims RFC 7662 §2.2 names, and the token's `cnf` when it
 *                   has one (RFC 8705 §3.2: the resource server checks the binding);
 *                   otherwise `{"active":false}` and nothing else, whatever the reason
 *                   (§2.2: no hint why)
 */
import type { Principal } from '../domain/principal.js';
import { PortariaError } from '../errors.js';
import type { TokenVerifier } from '../verify/tokenVerifier.js';
import { type OAuthFormCall, readAuthenticatedForm, tokenParameter } from './authenticatedForm.js';
import type { ClientAuthenticationDeps } from './clientAuthentication.js';
import { OAuthError } from './oauthError.js';
import { presentedToken } from './presentedToken.js';

export interface IntrospectionEndpointDeps extends ClientAuthenticationDeps {
  readonly verifier: Pick<TokenVerifier, 'verify'>;
  /**
   * True while the revocation list cannot be confirmed current and the edge refuses
   * requests for it (`revocation.whenStale`); absent: never.
   */
  readonly revocationStale?: () => boolean;
  /** An active token refused (503) because the list was stale, counted as the edge's are. */
  readonly onStaleRefusal?: () => void;
}

export interface IntrospectionResult {
  readonly clientId: string;
  /** The RFC 7662 §2.2 response body. */
  readonly body: string;
  readonly outcome: 'active' | 'inactive';
}

const INACTIVE = JSON.stringify({ active: false });

/**
 * An authenticated client without the `introspect` permission: `unauthorized_client`
 * with 403 (RFC 7662 §2.3), the catalogue's 403 code.
 */
function introspectionNotPermitted(): OAuthError {
  return new OAuthError('unauthorized_client', 'This client may not introspect tokens.', {
    reason: 'introspection-not-permitted',
    code: 'insufficient-scope',
  });
}

export async function runIntrospectionRequest(
  call: OAuthFormCall,
  deps: IntrospectionEndpointDeps,
): Promise<IntrospectionResult> {
  const { client, form } = await readAuthenticatedForm(call, deps);
  if (!client.permissions.includes('introspect')) throw introspectionNotPermitted();
  const principal = await presentedToken(deps.verifier, tokenParameter(form));
  if (principal === null) return { clientId: client.id, body: INACTIVE, outcome: 'inactive' };
  // After verification, as at the edge: a revocation already known is a verdict, stale or not.
  if (deps.revocationStale?.() === true) {
    deps.onStaleRefusal?.();
    throw new PortariaError(
      'service-unavailable',
      'The revocation list cannot be confirmed as current; retry later.',
      { reason: 'revocation-stale' },
    );
  }
  return { clientId: client.id, body: JSON.stringify(describe(principal)), outcome: 'active' };
}

/** The token's claims under their RFC 7662 §2.2 names (absent ones left out). */
function describe(principal: Principal): Record<string, unknown> {
  const { claims } = principal;
  return {
    active: true,
    scope: principal.scope,
    client_id: principal.clientId,
    sub: principal.subject,
    aud: claims.aud,
    iss: principal.issuer,
    exp: principal.expiresAt,
    iat: principal.issuedAt,
    ...(typeof claims.nbf === 'number' ? { nbf: claims.nbf } : {}),
    jti: principal.tokenId,
    // As the token response named it (RFC 9449 §5): a key-bound token is a DPoP one.
    token_type: isConfirmation(claims.cnf) && claims.cnf.jkt !== undefined ? 'DPoP' : 'Bearer',
    ...(isConfirmation(claims.cnf) ? { cnf: claims.cnf } : {}),
  };
}

/** A `cnf` object (RFC 7800 §3.1) is passed on as the token carries it. */
function isConfirmation(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
