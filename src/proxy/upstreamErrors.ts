/**
 * Upstream failure classes and their public problems.
 *
 * A failed exchange with an upstream is one of four kinds, read from the error's `code`
 * (undici `lib/core/errors.js`, Node's system errors):
 *
 * - `timeout`: no response headers, or a body stall, within the route's time
 *   (`UND_ERR_HEADERS_TIMEOUT`, `UND_ERR_BODY_TIMEOUT`, and `ETIMEDOUT` which our own
 *   WebSocket handshake timer raises) → 504 `upstream-timeout` (RFC 9110 §15.6.5);
 * - `refused`: no connection could be made (`ECONNREFUSED`, `ENOTFOUND`, `EAI_AGAIN`,
 *   `UND_ERR_CONNECT_TIMEOUT`, `EHOSTUNREACH`, `ENETUNREACH`) → 502;
 * - `reset`: the connection broke mid-exchange (`ECONNRESET`, `UND_ERR_SOCKET`, `EPIPE`)
 *   → 502;
 * - `error`: anything else (bad response framing, …) → 502 `upstream-unavailable`.
 *
 * The public detail is fixed per kind: it never carries an address, an errno or a stack.
 * The kind is the private reason (`upstream-timeout`, `upstream-refused`, …) for the log
 * and a bounded metric label; the original error is kept as `cause` for the log only.
 */
import { PortariaError } from '../errors.js';

export type UpstreamErrorKind = 'timeout' | 'refused' | 'reset' | 'error';

const KIND_BY_CODE: ReadonlyMap<string, UpstreamErrorKind> = new Map<string, UpstreamErrorKind>([
  ['UND_ERR_HEADERS_TIMEOUT', 'timeout'],
  ['UND_ERR_BODY_TIMEOUT', 'timeout'],
  ['ETIMEDOUT', 'timeout'],
  ['ECONNREFUSED', 'refused'],
  ['ENOTFOUND', 'refused'],
  ['EAI_AGAIN', 'refused'],
  ['UND_ERR_CONNECT_TIMEOUT', 'refused'],
  ['EHOSTUNREACH', 'refused'],
  ['ENETUNREACH', 'refused'],
  ['ECONNRESET', 'reset'],
  ['UND_ERR_SOCKET', 'reset'],
  ['EPIPE', 'reset'],
]);

const DETAIL: Readonly<Record<UpstreamErrorKind, string>> = {
  timeout: 'The upstream service did not answer in time.',
  refused: 'The upstream service could not be reached.',
  reset: 'The connection to the upstream service was interrupted.',
  error: 'The upstream service returned an invalid response.',
};

/** The first `code` on the error, an AggregateError's first member, or a `cause` (bounded). */
function codeOf(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 4; depth++) {
    if (typeof current !== 'object' || current === null) return undefined;
    const { code } = current as { code?: unknown };
    if (code !== undefined) return code;
    // Node's happy-eyeballs connect fails with an AggregateError of per-address errors.
    current =
      current instanceof AggregateError
        ? current.errors[0]
        : (current as { cause?: unknown }).cause;
  }
  return undefined;
}

export function classifyUpstreamError(error: unknown): UpstreamErrorKind {
  const code = codeOf(error);
  return (typeof code === 'string' && KIND_BY_CODE.get(code)) || 'error';
}

/** The public problem for a failed upstream exchange of the given kind. */
export function upstreamProblem(kind: UpstreamErrorKind, cause?: unknown): PortariaError {
  return new PortariaError(
    kind === 'timeout' ? 'upstream-timeout' : 'upstream-unavailable',
    DETAIL[kind],
    { reason: `upstream-${kind}`, cause },
  );
}
