/**
 * Extracts the bearer token from a request (RFC 6750 §2.1), refusing every ambiguous
 * form before any cryptography runs:
 *   - no Authorization header, or another scheme → token-missing (no error code, §3.1);
 *   - more than one Authorization header, `Bearer` with no token, an over-long token →
 *     token-invalid (`Bearer a.b.c d.e.f` is passed on whole: the verifier's compact-JWS
 *     check refuses it);
 *   - an `access_token` query parameter (§2.3, which we do not support) → token-invalid,
 *     even when a header is present too (a client must use one method only); also in the
 *     spellings frameworks read as that name (`Access_Token`, `access.token`, `;`-separated);
 * Node keeps only the first of duplicate Authorization headers in `headers`, so the raw
 * header list is counted.
 *
 * Whether the token is a compact JWS in its one spelling (`compactJws.ts`, token-invalid)
 * is the verifier's first step on a verified-token cache miss: a token found in the cache
 * passed it when it was verified, so the common case skips the pattern match.
 */
import { type FailureReason, PortariaError } from '../errors.js';

/** Larger tokens are refused before parsing; ours are well under 1 KiB. */
export const MAX_TOKEN_LENGTH = 8192;

const MAY_NAME_ACCESS = /access/i;

/**
 * True when a query parameter is `access_token` to some framework behind us: any case,
 * `;` as a separator (older Java and Perl stacks), and PHP's renaming of `.`, ` ` and `[`
 * in names to `_` (`access.token` arrives as `access_token`).
 */
function namesAccessToken(search: string): boolean {
  for (const name of new URLSearchParams(search.replaceAll(';', '&')).keys()) {
    if (name.length === 12 && name.replace(/[. []/g, '_').toLowerCase() === 'access_token') {
      return true;
    }
  }
  return false;
}

export const WWW_AUTHENTICATE_MISSING = 'Bearer realm="portaria"';
export const WWW_AUTHENTICATE_INVALID = 'Bearer realm="portaria", error="invalid_token"';

/** `authorizationLines`: how many `Authorization` lines the request carried (one pass at the edge). */
export function bearerToken(
  authorization: string | undefined,
  authorizationLines: number,
  search: string,
): string {
  // The parse runs only when the raw query could name access_token: literally, in any
  // case, or with any character percent-encoded (`%61ccess_token` decodes to it too).
  if (search.length > 0 && (MAY_NAME_ACCESS.test(search) || search.includes('%'))) {
    if (namesAccessToken(search)) {
      throw invalid('token-in-query', 'Access tokens are not accepted in the query string.');
    }
  }
  if (authorization === undefined) {
    throw new PortariaError('token-missing', 'The request carries no bearer token.', {
      reason: 'no-authorization',
      headers: { 'www-authenticate': WWW_AUTHENTICATE_MISSING },
    });
  }
  if (authorizationLines > 1)
    throw invalid('multiple-authorization', 'Send exactly one Authorization header.');

  const space = authorization.indexOf(' ');
  const scheme = space === -1 ? authorization : authorization.slice(0, space);
  if (scheme.toLowerCase() !== 'bearer') {
    throw new PortariaError(
      'token-missing',
      'The Authorization header must use the Bearer scheme.',
      {
        reason: 'other-scheme',
        headers: { 'www-authenticate': WWW_AUTHENTICATE_MISSING },
      },
    );
  }
  const token = space === -1 ? '' : authorization.slice(space + 1).trim();
  if (token === '') throw invalid('empty-token', 'The Bearer token is empty.');
  if (token.length > MAX_TOKEN_LENGTH)
    throw invalid('token-too-long', 'The access token is too long.');
  return token;
}

export function invalid(reason: FailureReason, detail: string): PortariaError {
  return new PortariaError('token-invalid', detail, {
    reason,
    headers: { 'www-authenticate': WWW_AUTHENTICATE_INVALID },
  });
}
