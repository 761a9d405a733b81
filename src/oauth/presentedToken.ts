/**
 * A token presented to the revocation or introspection endpoint, verified exactly as the
 * edge verifies a bearer token (signature, issuer, claims, revocation): its principal, or
 * null when the edge would refuse it with 401 (malformed, foreign, expired, revoked).
 * A key set that cannot answer (503) is not a verdict on the token: that error is thrown.
 */
import type { Principal } from '../domain/principal.js';
import { PortariaError } from '../errors.js';
import { MAX_TOKEN_LENGTH } from '../verify/invalidToken.js';
import type { TokenVerifier } from '../verify/tokenVerifier.js';

export async function presentedToken(
  verifier: Pick<TokenVerifier, 'verify'>,
  token: string,
): Promise<Principal | null> {
  // As the edge: a token it would not read is no token.
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) return null;
  try {
    return await verifier.verify(token);
  } catch (error) {
    if (error instanceof PortariaError && error.status === 401) return null;
    throw error;
  }
}
