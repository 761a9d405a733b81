/**
 * `POST {oauth.tokenPath}`, the RFC 6749 token endpoint for the client credentials grant
 * (§4.4), as a list of named steps, in order:
 *
 *   method          POST only (405, problem details)
 *   media type      application/x-www-form-urlencoded (415)
 *   address limit   the caller's address bucket, before the body is read (429)
 *   form            read within `token.bodyLimitBytes` (413); strict parsing
 *   grant type      `client_credentials` (invalid_request / unsupported_grant_type)
 *   client          `authenticateOAuthClient`: one method; the token operation's pair
 *                   back-off, client bucket and secret check (invalid_client, 429)
 *   grant           scope narrowing (invalid_scope), resource → aud (invalid_target)
 *   issue           the contract operation's signer and claims (`TokenService.issueTo`)
 *   respond         RFC 6749 §5.1: access_token, token_type, expires_in, scope; no-store
 *
 * Refusals are `OAuthError`s (RFC 6749 §5.2 bodies) or, for the HTTP-level ones,
 * `PortariaError`s (problem details).
 */
import { PortariaError } from '../errors.js';
import type { IssuedToken } from '../token/issueAccessToken.js';
import { refuseIfWaiting } from '../token/tokenOperation.js';
import type { TokenService } from '../token/tokenService.js';
import { sourceAddress } from '../tokenLimits/sourceAddress.js';
import {
  authenticateOAuthClient,
  type ClientAuthenticationCall,
  type ClientAuthenticationDeps,
} from './clientAuthentication.js';
import { type FormCall, readFormBody, requireFormMediaType } from './formBody.js';
import { OAuthError } from './oauthError.js';
import { checkGrantType, grantFor } from './tokenGrant.js';

export interface OAuthTokenCall extends FormCall, ClientAuthenticationCall {
  readonly method: string | undefined;
  /** How many `Authorization` header lines the request carried. */
  readonly authorizationLines: number;
}

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
  call: OAuthTokenCall,
  deps: OAuthTokenDeps,
): Promise<OAuthTokenResult> {
  requirePost(call.method);
  requireFormMediaType(call.contentType);
  const address = sourceAddress(call.clientAddress);
  refuseIfWaiting(await deps.limiter.takeAddress(address), 'address', deps);
  const form = await readFormBody(call);
  checkGrantType(form);
  if (call.authorizationLines > 1) {
    throw new OAuthError('invalid_request', 'Send one Authorization header.', {
      reason: 'multiple-authorization',
    });
  }
  const { client } = await authenticateOAuthClient(form, call, deps);
  const grant = grantFor(client, form, deps.audience);
  const issued = deps.tokens.issueTo(client, grant.scope, grant.audience);
  return {
    clientId: client.id,
    issued,
    body: JSON.stringify({
      access_token: issued.token,
      token_type: 'Bearer',
      expires_in: issued.lifetimeSeconds,
      scope: issued.scope,
    }),
  };
}

function requirePost(method: string | undefined): void {
  if (method !== 'POST') {
    throw new PortariaError('method-not-allowed', 'The token endpoint accepts POST only.', {
      reason: 'method',
      headers: { allow: 'POST' },
    });
  }
}
