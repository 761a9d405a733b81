/**
 * Writing responses. A refusal is written here in the shape the entry chose:
 *   problem   problem details (RFC 9457 semantics with the contract's field names: tipo,
 *             titulo, status, detalhe, instancia) as `application/problem+json` — the
 *             contract's operation, the edge, the admin API;
 *   oauth     at the OAuth endpoints, an error with an RFC 6749 code as §5.2 JSON
 *             `{error, error_description}` with `Pragma: no-cache`; any other refusal
 *             there (405, 413, 415, 429, 503) as problem details.
 * Never cached; the challenge, when the entry gives one, as `WWW-Authenticate`. An
 * unexpected failure is a bare 500 with no body. The raw-socket twin for upgrades is
 * `proxy/socketProblem.ts` (same body, `problemJson`).
 */
import type { ServerResponse } from 'node:http';
import { oauthErrorJson, type PortariaError, problemJson } from '../errors.js';

/** The shape of an entry's refusals. */
export type RefusalShape = 'problem' | 'oauth';

/** Never cached (RFC 9111 §5.2.2.5; `Pragma` for HTTP/1.0 caches, RFC 6749 §5.1). */
export const NO_STORE: Readonly<Record<string, string>> = Object.freeze({
  'cache-control': 'no-store',
  pragma: 'no-cache',
});

/** A request target without its query. */
export function pathOnly(url: string | undefined): string {
  if (url === undefined) return '';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** `instancia`: the request path (never the query, which may hold secrets) and request id. */
export function instanceOf(path: string, requestId: string): string {
  const shown = path.length > 256 ? path.slice(0, 256) : path;
  return `${shown}#${requestId}`;
}

export interface RefusalOptions {
  readonly shape?: RefusalShape;
  /** The `WWW-Authenticate` value the entry chose for this refusal. */
  readonly challenge?: string | undefined;
  /** A fresh DPoP nonce beside a DPoP challenge (RFC 9449 §9). */
  readonly dpopNonce?: string | undefined;
  /** The connection must close after the answer (a body left unread). */
  readonly close?: boolean;
}

/** Writes `error` as the entry's refusal (see above); destroys a response already begun. */
export function sendRefusal(
  res: ServerResponse,
  error: PortariaError,
  typeBase: string,
  instance: string,
  options: RefusalOptions = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const oauth = options.shape === 'oauth' && error.oauth !== undefined;
  const body = oauth ? oauthErrorJson(error) : problemJson(error, typeBase, instance);
  res.statusCode = error.status;
  res.setHeader('content-type', oauth ? 'application/json' : 'application/problem+json');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.setHeader('cache-control', 'no-store');
  if (oauth) res.setHeader('pragma', 'no-cache');
  // The body echoes request paths and property names: never to be sniffed as HTML.
  res.setHeader('x-content-type-options', 'nosniff');
  if (error.headers)
    for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  if (options.challenge !== undefined) res.setHeader('www-authenticate', options.challenge);
  if (options.dpopNonce !== undefined) res.setHeader('dpop-nonce', options.dpopNonce);
  if (options.close === true) res.setHeader('connection', 'close');
  res.end(body);
}

/** A bare 500: nothing about the failure leaves the process. */
export function sendServerError(res: ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.statusCode = 500;
  res.setHeader('content-length', 0);
  res.setHeader('cache-control', 'no-store');
  res.end();
}

export function sendJson(
  res: ServerResponse,
  status: number,
  json: string,
  headers: Readonly<Record<string, string>>,
  headOnly = false,
): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.setHeader('content-length', Buffer.byteLength(json));
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.end(headOnly ? undefined : json);
}
