/**
 * The error answers of the OAuth 2.0 endpoints (RFC 6749 §5.2): a JSON body
 * `{error, error_description}` with the code's status, never cached. The description is
 * public and fixed per occurrence (it names a parameter, never echoes a value or a
 * secret); `reason` is private, for the access line and the metrics, as with
 * `PortariaError`.
 *
 * HTTP-level refusals at those endpoints (405, 413, 415, 429, 503) stay problem details
 * (`PortariaError`): RFC 6749 defines no error code for them.
 */
import type { FailureReason } from '../errors.js';

/** RFC 6749 §5.2 codes, RFC 8707 §2 `invalid_target`, and their statuses. */
export const OAUTH_ERRORS = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  invalid_scope: 400,
  invalid_target: 400,
} as const satisfies Record<string, number>;

export type OAuthErrorCode = keyof typeof OAUTH_ERRORS;

/** The realm of the `Basic` challenge on a 401 (RFC 6749 §5.2, RFC 7617 §2). */
export const BASIC_CHALLENGE = 'Basic realm="portaria"';

export const NO_STORE: Readonly<Record<string, string>> = Object.freeze({
  'cache-control': 'no-store',
  pragma: 'no-cache',
});

export class OAuthError extends Error {
  readonly error: OAuthErrorCode;
  readonly status: number;
  /** Public: `error_description`. */
  readonly description: string;
  /** Private, bounded: the access line's `reason` and metric labels. */
  readonly reason: FailureReason;
  /** The request authenticated (or tried to) with HTTP Basic: a 401 carries the challenge. */
  readonly usedBasic: boolean;

  constructor(
    error: OAuthErrorCode,
    description: string,
    options: { readonly reason: FailureReason; readonly usedBasic?: boolean },
  ) {
    super(`${error}: ${description}`);
    this.name = 'OAuthError';
    this.error = error;
    this.status = OAUTH_ERRORS[error];
    this.description = description;
    this.reason = options.reason;
    this.usedBasic = options.usedBasic === true;
  }

  /** The response headers: no caching, and `WWW-Authenticate: Basic` on a 401 for Basic. */
  headers(): Record<string, string> {
    const headers: Record<string, string> = { ...NO_STORE };
    if (this.status === 401 && this.usedBasic) headers['www-authenticate'] = BASIC_CHALLENGE;
    return headers;
  }

  /** The response body (RFC 6749 §5.2). */
  body(): string {
    return JSON.stringify({ error: this.error, error_description: this.description });
  }

  /** The same error, marked as answering a request that used HTTP Basic. */
  withBasic(): OAuthError {
    return this.usedBasic
      ? this
      : new OAuthError(this.error, this.description, { reason: this.reason, usedBasic: true });
  }
}

/**
 * Every refusal of a client's credentials (unknown client, wrong secret, a method it does
 * not allow, any refused assertion): one description, so the answer never tells which
 * clients exist or how they authenticate (docs/security.md).
 */
export function credentialsRefused(reason: FailureReason): OAuthError {
  return new OAuthError('invalid_client', 'The client credentials were not accepted.', { reason });
}

export function isOAuthError(value: unknown): value is OAuthError {
  return value instanceof OAuthError;
}
