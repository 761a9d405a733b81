/**
 * The credentials step: the access token the request presents (RFC 6750 §2.1; with
 * `dpop.enabled`, RFC 9449 §7.1's `DPoP` scheme too), every ambiguous form refused before
 * any cryptography runs:
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
  return accessToken(authorization, authorizationLines, search, false);
}

/** The access token of a `Bearer` or (with `acceptDpop`) `DPoP` value, or throws. */
export function accessToken(
  authorization: string | undefined,
  authorizationLines: number,
  search: string,
  acceptDpop: boolean,
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
  const written = (space === -1 ? authorization : authorization.slice(0, space)).toLowerCase();
  if (written !== 'bearer' && !(acceptDpop && written === 'dpop')) {
    throw new PortariaError(
      'token-missing',
      acceptDpop
        ? 'The Authorization header must use the Bearer or DPoP scheme.'
        : 'The Authorization header must use the Bearer scheme.',
      { reason: 'other-scheme' },
    );
  }
  const token = space === -1 ? '' : authorization.slice(space + 1).trim();
  if (token === '') throw invalid('empty-token', 'The access token is empty.');
  if (token.length > MAX_TOKEN_LENGTH)
    throw invalid('token-too-long', 'The access token is too long.');
  return token;
}

/** The step; `acceptDpop` with `dpop.enabled`. */
export function credentials(acceptDpop: boolean): Step<AccessRequest> {
  return {
    name: 'credentials',
    run(request) {
      const search = request.target?.search ?? '';
      request.token = accessToken(
        request.authorization,
        request.authorizationLines,
        search,
        acceptDpop,
      );
      // Accepted: the value starts with `Bearer` or `DPoP`, in any case.
      const first = (request.authorization as string).charCodeAt(0) | 0x20;
      request.scheme = first === 0x64 ? 'dpop' : 'bearer';
    },
  };
}
