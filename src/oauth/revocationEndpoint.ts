/**
 * `POST {oauth.revocationPath}`, token revocation (RFC 7009) for a client's own tokens:
 *
 *   client          the shared steps (`authenticatedForm.ts`): POST, form, address
 *                   limit, client authentication as at the token endpoint
 *   token           the `token` parameter (invalid_request when absent)
 *   own token       verified as the edge verifies it (ours whatever their audience, RFC
 *                   8707); one we issued to this very client
 *   revoke          by `jti`, through the gateway's revocation store (every replica
 *                   enforces it as an admin revocation), until the token's `exp` + skew
 *
 * Any other token — another client's, another issuer's, unknown, malformed, expired or
 * already revoked — is answered 200 and changes nothing (RFC 7009 §2.2): the answer
 * never tells a client whether a token exists. No `unsupported_token_type`: access
 * tokens are the only kind the gateway issues, and every one is revocable.
 */
import type { RevocationStore } from '../revocation/revocationStore.js';
import type { TokenVerifier } from '../verify/tokenVerifier.js';
import { type OAuthFormCall, readAuthenticatedForm, tokenParameter } from './authenticatedForm.js';
import type { ClientAuthenticationDeps } from './clientAuthentication.js';
import { presentedToken } from './presentedToken.js';

export interface RevocationEndpointDeps extends ClientAuthenticationDeps {
  readonly verifier: Pick<TokenVerifier, 'verify'>;
  readonly revocation: Pick<RevocationStore, 'revokeToken'>;
  /** Our tokens are accepted until `exp` + this: their entry lives that long. */
  readonly clockSkewSeconds: number;
  /** A client revoked one of its tokens (for the audit log and the metrics). */
  readonly onRevoked?: (clientId: string, tokenId: string) => void;
}

export interface RevocationResult {
  readonly clientId: string;
  /** Always empty (RFC 7009 §2.2: the client ignores it). */
  readonly body: null;
  /** `revoked`, or `ignored` when nothing changed (never told to the client). */
  readonly outcome: 'revoked' | 'ignored';
}

export async function runRevocationRequest(
  call: OAuthFormCall,
  deps: RevocationEndpointDeps,
): Promise<RevocationResult> {
  const { client, form } = await readAuthenticatedForm(call, deps);
  const principal = await presentedToken(deps.verifier, tokenParameter(form));
  // `self`: tokens of trusted external issuers are theirs to revoke, whatever their client_id.
  if (principal === null || principal.issuerId !== 'self' || principal.clientId !== client.id) {
    return { clientId: client.id, body: null, outcome: 'ignored' };
  }
  await deps.revocation.revokeToken(principal.tokenId, principal.expiresAt + deps.clockSkewSeconds);
  deps.onRevoked?.(client.id, principal.tokenId);
  return { clientId: client.id, body: null, outcome: 'revoked' };
}
