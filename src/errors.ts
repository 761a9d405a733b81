/**
 * The closed catalogue of request-time errors.
 *
 * Every refusal a client can see is one of these codes. Each code has a fixed HTTP
 * status and a fixed public title; the problem-details `tipo` is the configured
 * base URI plus the code. The `detail` of a thrown error is public (it names the
 * offending field, never a value); the `reason` is private: it goes to the log and
 * to a bounded metric label, never to the client.
 *
 * Anything thrown that is not a `PortariaError` becomes a 500 with no body.
 */

export const PROBLEMS = {
  'invalid-request': { status: 400, title: 'Invalid request' },
  'invalid-path': { status: 400, title: 'Ambiguous request path' },
  'invalid-client': { status: 401, title: 'Client authentication failed' },
  'token-missing': { status: 401, title: 'Access token missing' },
  'token-invalid': { status: 401, title: 'Access token invalid' },
  'token-expired': { status: 401, title: 'Access token expired' },
  'token-revoked': { status: 401, title: 'Access token revoked' },
  'insufficient-scope': { status: 403, title: 'Insufficient scope' },
  'not-found': { status: 404, title: 'Not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  'request-timeout': { status: 408, title: 'Request timeout' },
  'payload-too-large': { status: 413, title: 'Payload too large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type' },
  'too-many-requests': { status: 429, title: 'Too many requests' },
  'headers-too-large': { status: 431, title: 'Request header fields too large' },
  'not-implemented': { status: 501, title: 'Not implemented' },
  'upstream-unavailable': { status: 502, title: 'Upstream unavailable' },
  'service-unavailable': { status: 503, title: 'Service unavailable' },
  'issuer-unavailable': { status: 503, title: 'Token issuer unavailable' },
  'upstream-timeout': { status: 504, title: 'Upstream timeout' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemCode = keyof typeof PROBLEMS;

export const PROBLEM_CODES = Object.keys(PROBLEMS) as ProblemCode[];

/** A refusal with a public code and detail, and a private reason for logs and metrics. */
export class PortariaError extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly title: string;
  /** Public explanation of this occurrence. Names fields, never echoes secrets. */
  readonly detail: string;
  /** Private, bounded reason (a short identifier) for the log and metric labels. */
  readonly reason: string;
  /** Extra response headers (e.g. `WWW-Authenticate`, `Allow`, `Retry-After`). */
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(
    code: ProblemCode,
    detail: string,
    options: { reason?: string; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(`${code}: ${detail}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PortariaError';
    this.code = code;
    this.status = PROBLEMS[code].status;
    this.title = PROBLEMS[code].title;
    this.detail = detail;
    this.reason = options.reason ?? code;
    this.headers = options.headers;
  }
}

export function isPortariaError(value: unknown): value is PortariaError {
  return value instanceof PortariaError;
}
