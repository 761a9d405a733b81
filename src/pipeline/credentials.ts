/**
 * The credentials step: the access token the request presents (RFC 6750 §2.1), every
 * ambiguous form refused before any cryptography runs:
 *   - no Authorization header, or another scheme → token-missing (the challenge carries
 *     no error code, §3.1);
 *   - more than one Authorization line, `Bearer` with no token, an over-long token →
 *     token-invalid (`Bearer a.b.c d.e.f` is passed on whole: the verifier's compact-JWS
 *     check refuses it);
 *   - an `access_token` query parameter (§2.3, which we do not support) → token-invalid,
 *     even when a header is present too (a client must use one method only); also in the
 *     spellings frameworks read as that name (`Access_Token`, `access.token`, `;`-separated).
 * The entry counts the Authorization lines (Node keeps only the first in `headers`).
 *
 * Whether the token is a compact JWS in its one spelling (`verify/compactJws.ts`) is the
 * verifier's first step on a verified-token cache miss: a token found in the cache passed
 * it when it was verified, so the common case skips the pattern match.
 */
import { PortariaError } from '../errors.js';
import { invalid, MAX_TOKEN_LENGTH } from '../verify/invalidToken.js';
import type { AccessRequest } from './accessRequest.js';
import type { Step } from './runSteps.js';

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

/** The bearer token of an `Authorization` value sent in `authorizationLines` lines, or throws. */
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
      { reason: 'other-scheme' },
    );
  }
  const token = space === -1 ? '' : authorization.slice(space + 1).trim();
  if (token === '') throw invalid('empty-token', 'The Bearer token is empty.');
  if (token.length > MAX_TOKEN_LENGTH)
    throw invalid('token-too-long', 'The access token is too long.');
  return token;
}

export const credentials: Step<AccessRequest> = {
  name: 'credentials',
  run(request) {
    const search = request.target?.search ?? '';
    request.token = bearerToken(request.authorization, request.authorizationLines, search);
    request.scheme = 'bearer';
  },
};
