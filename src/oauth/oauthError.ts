/**
 * The refusals of the OAuth 2.0 endpoints that RFC 6749 §5.2 names: a `PortariaError`
 * carrying the RFC 6749 code (`oauth`), the problem code of the same status, and the
 * public description as its detail (it names a parameter, never echoes a value or a
 * secret). The OAuth entry writes them as `{error, error_description}`, never cached,
 * with the `Basic` challenge on a 401 when the request sent `Authorization`
 * (`http/replies.ts`); HTTP-level refusals there (405, 413, 415, 429, 503) are plain
 * `PortariaError`s, written as problem details.
 */
import {
  type FailureReason,
  OAUTH_ERRORS,
  type OAuthErrorCode,
  PortariaError,
  type ProblemCode,
} from '../errors.js';

export class OAuthError extends PortariaError {
  /** The RFC 6749 §5.2 `error`. */
  readonly error: OAuthErrorCode;

  constructor(
    error: OAuthErrorCode,
    description: string,
    options: {
      readonly reason: FailureReason;
      /** Another problem code (and so status) than the one of the error's RFC 6749 status. */
      readonly code?: ProblemCode;
      /** Extra response headers (`DPoP-Nonce`). */
      readonly headers?: Record<string, string>;
    },
  ) {
    super(options.code ?? OAUTH_ERRORS[error], description, {
      reason: options.reason,
      oauth: error,
      ...(options.headers === undefined ? {} : { headers: options.headers }),
    });
    this.name = 'OAuthError';
    this.error = error;
  }

  /** Public: `error_description`. */
  get description(): string {
    return this.detail;
  }
}

/**
 * Every refusal of a client's credentials (unknown client, wrong secret, a method it does
 * not allow, any refused assertion), at the contract's operation and the OAuth endpoints
 * alike: one description, so the answer never tells which clients exist or how they
 * authenticate (docs/security.md).
 */
export function credentialsRefused(reason: FailureReason): OAuthError {
  return new OAuthError('invalid_client', 'The client credentials were not accepted.', { reason });
}

export function isOAuthError(value: unknown): value is OAuthError {
  return value instanceof OAuthError;
}
