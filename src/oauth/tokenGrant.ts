/**
 * What a client-credentials request asks for, checked against what the client may have
 * (RFC 6749 §4.4.2, §3.3; RFC 8707 §2):
 *
 *   grant_type  `client_credentials` only (absent: `invalid_request`; another:
 *               `unsupported_grant_type`)
 *   scope       space-separated; each one must be among the client's scopes, and the
 *               token carries only those asked for (in the client's order). Absent: all
 *               of the client's scopes. Anything else: `invalid_scope`.
 *   resource    an absolute URI without a fragment that is one of the client's
 *               `audiences`: it becomes the token's `aud`. Absent: the first of the
 *               client's audiences (by default the gateway's audience). Anything else:
 *               `invalid_target`. One per request (`formBody.ts`).
 */
import type { ClientRecord } from '../clients/clientRegistry.js';
import { isScopeToken } from '../domain/scope.js';
import { OAuthError } from './oauthError.js';

export const CLIENT_CREDENTIALS = 'client_credentials';

export interface Grant {
  /** Space-separated, as the token's `scope` claim carries it. */
  readonly scope: string;
  readonly audience: string;
}

export function checkGrantType(form: ReadonlyMap<string, string>): void {
  const grantType = form.get('grant_type');
  if (grantType === undefined) {
    throw new OAuthError('invalid_request', 'grant_type is required.', {
      reason: 'grant-type-missing',
    });
  }
  if (grantType !== CLIENT_CREDENTIALS) {
    throw new OAuthError(
      'unsupported_grant_type',
      'This endpoint supports the client_credentials grant only.',
      { reason: 'grant-type-unsupported' },
    );
  }
}

export function grantFor(
  client: ClientRecord,
  form: ReadonlyMap<string, string>,
  gatewayAudience: string,
): Grant {
  return {
    scope: narrowedScope(client, form.get('scope')),
    audience: audienceFor(client, form.get('resource'), gatewayAudience),
  };
}

function narrowedScope(client: ClientRecord, requested: string | undefined): string {
  if (requested === undefined) return client.scope;
  const asked = new Set<string>();
  for (const token of requested.split(' ')) {
    if (!isScopeToken(token) || !client.scopes.includes(token)) {
      throw new OAuthError(
        'invalid_scope',
        'The scope asks for more than the client is granted, or is malformed.',
        { reason: 'scope-not-granted' },
      );
    }
    asked.add(token);
  }
  return client.scopes.filter((s) => asked.has(s)).join(' ');
}

function audienceFor(
  client: ClientRecord,
  resource: string | undefined,
  gatewayAudience: string,
): string {
  const allowed = client.audiences ?? [gatewayAudience];
  if (resource === undefined) return allowed[0] as string;
  if (!isAbsoluteUriWithoutFragment(resource)) {
    throw new OAuthError('invalid_target', 'resource must be an absolute URI without a fragment.', {
      reason: 'resource-malformed',
    });
  }
  if (!allowed.includes(resource)) {
    throw new OAuthError('invalid_target', 'The client may not ask for this resource.', {
      reason: 'resource-not-allowed',
    });
  }
  return resource;
}

/** RFC 8707 §2: "an absolute URI … MUST NOT include a fragment component". */
function isAbsoluteUriWithoutFragment(value: string): boolean {
  if (value.includes('#') || !/^[A-Za-z][A-Za-z0-9+.-]*:/.test(value)) return false;
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}
