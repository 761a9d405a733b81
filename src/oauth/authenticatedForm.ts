/**
 * The steps every OAuth endpoint (token, revocation, introspection) takes before its own,
 * in order:
 *
 *   method          POST only (405, problem details)
 *   media type      application/x-www-form-urlencoded (415)
 *   address limit   the caller's address bucket, before the body is read (429)
 *   form            read within the body limit (413); strict parsing (invalid_request)
 *   —               the endpoint's own form checks (the token endpoint's grant type)
 *   authorization   one `Authorization` line at most (invalid_request)
 *   client          `authenticateOAuthClient`: one method, the token operation's pair
 *                   back-off, client bucket and secret check (invalid_client, 429)
 *
 * Revocation and introspection then read `token` (`tokenParameter`, invalid_request when
 * absent). `token_type_hint` is read by nobody: the gateway issues access tokens only,
 * and looks every presented token up as one (RFC 7009 §2.1 and RFC 7662 §2.1 let a
 * server ignore the hint).
 */
import type { ClientCertificate } from '../domain/clientCertificate.js';
import { PortariaError } from '../errors.js';
import { refuseIfWaiting } from '../limits/refuseIfWaiting.js';
import { sourceAddress } from '../limits/sourceAddress.js';
import {
  type AuthenticatedClient,
  authenticateOAuthClient,
  type ClientAuthenticationCall,
  type ClientAuthenticationDeps,
} from './clientAuthentication.js';
import { type FormCall, readFormBody, requireFormMediaType } from './formBody.js';
import { OAuthError } from './oauthError.js';

export interface OAuthFormCall extends FormCall, ClientAuthenticationCall {
  readonly method: string | undefined;
  /** How many `Authorization` header lines the request carried. */
  readonly authorizationLines: number;
  /** The request's client certificate: every entry passes it, none or not. */
  readonly certificate: ClientCertificate | null;
  /** The token endpoint's DPoP key (RFC 9449 §5), checked when called; see `TokenCall`. */
  readonly dpopKey?: () => Promise<string | undefined>;
}

export interface AuthenticatedForm extends AuthenticatedClient {
  readonly form: ReadonlyMap<string, string>;
}

/**
 * The shared steps; `checkForm` runs the endpoint's own form checks between the form and
 * the client (a malformed request is refused before any credential is looked at).
 */
export async function readAuthenticatedForm(
  call: OAuthFormCall,
  deps: ClientAuthenticationDeps,
  checkForm?: (form: ReadonlyMap<string, string>) => void | Promise<void>,
): Promise<AuthenticatedForm> {
  if (call.method !== 'POST') {
    throw new PortariaError('method-not-allowed', 'This endpoint accepts POST only.', {
      reason: 'method',
      headers: { allow: 'POST' },
    });
  }
  requireFormMediaType(call.contentType);
  refuseIfWaiting(
    await deps.limiter.takeAddress(sourceAddress(call.clientAddress)),
    'address',
    deps,
  );
  const form = await readFormBody(call);
  await checkForm?.(form);
  if (call.authorizationLines > 1) {
    throw new OAuthError('invalid_request', 'Send one Authorization header.', {
      reason: 'multiple-authorization',
    });
  }
  const authenticated = await authenticateOAuthClient(form, call, deps);
  return { ...authenticated, form };
}

/** The `token` parameter (RFC 7009 §2.1, RFC 7662 §2.1). */
export function tokenParameter(form: ReadonlyMap<string, string>): string {
  const token = form.get('token');
  if (token === undefined) {
    throw new OAuthError('invalid_request', 'The token parameter is required.', {
      reason: 'missing-field',
    });
  }
  return token;
}
