/**
 * `POST {oauth.tokenPath}`, the RFC 6749 token endpoint for the client credentials grant
 * (§4.4), as a list of named steps, in order:
 *
 *   method, media type, address limit, form   the steps every OAuth endpoint shares
 *                   (`authenticatedForm.ts`; the body within `token.bodyLimitBytes`)
 *   grant type      `client_credentials` (invalid_request / unsupported_grant_type)
 *   authorization, client   the shared steps again: one `Authorization` line,
 *                   `authenticateOAuthClient` (invalid_client, 429)
 *   grant           scope narrowing (invalid_scope), resource → aud (invalid_target)
 *   dpop            with a `DPoP` header, its proof (RFC 9449 §5; `http/dpopIssuance.ts`),
 *                   after the form and before the client: 400 invalid_dpop_proof
 *   binding         RFC 8705 §3.1, the contract operation's rule (`boundThumbprint`): a
 *                   verified certificate, or the self-signed one the client's keys
 *                   proved, binds the token (`cnf`); an unverified one is refused, as is
 *                   none for a client with `requireCertificate` (401 invalid_client)
 *   issue           the contract operation's signer and claims (`TokenService.issueTo`)
 *   respond         RFC 6749 §5.1: access_token, token_type, expires_in, scope; no-store
 *
 * Refusals are `OAuthError`s (RFC 6749 §5.2 bodies) or, for the HTTP-level ones,
 * `PortariaError`s (problem details).
 */
import { boundThumbprint } from '../token/certificateBinding.js';
import type { IssuedToken } from '../token/issueAccessToken.js';
import type { TokenService } from '../token/tokenService.js';
import { type OAuthFormCall, readAuthenticatedForm } from './authenticatedForm.js';
import type { ClientAuthenticationDeps } from './clientAuthentication.js';
import { checkGrantType, grantFor } from './tokenGrant.js';

export interface OAuthTokenDeps extends ClientAuthenticationDeps {
  readonly tokens: TokenService;
  /** The gateway's `audience`: a client's default when it lists none. */
  readonly audience: string;
}

export interface OAuthTokenResult {
  readonly clientId: string;
  readonly issued: IssuedToken;
  /** The RFC 6749 §5.1 response body. */
  readonly body: string;
}

export async function runOAuthTokenRequest(
  call: OAuthFormCall,
  deps: OAuthTokenDeps,
): Promise<OAuthTokenResult> {
  let dpopKey: string | undefined;
  // The proof is checked once the form is (and before the client is authenticated).
  const checkForm = async (form: ReadonlyMap<string, string>): Promise<void> => {
    checkGrantType(form);
    dpopKey = await call.dpopKey?.();
  };
  const { client, form, proven } = await readAuthenticatedForm(call, deps, checkForm);
  const grant = grantFor(client, form, deps.audience);
  const thumbprint = boundThumbprint(client, call.certificate, proven);
  const issued = deps.tokens.issueTo(
    client,
    grant.scope,
    grant.audience,
    call.steps,
    thumbprint,
    dpopKey,
  );
  return {
    clientId: client.id,
    issued,
    body: JSON.stringify({
      access_token: issued.token,
      // RFC 9449 §5.1: a DPoP-bound token says so.
      token_type: issued.dpopKey === undefined ? 'Bearer' : 'DPoP',
      expires_in: issued.lifetimeSeconds,
      scope: issued.scope,
    }),
  };
}
