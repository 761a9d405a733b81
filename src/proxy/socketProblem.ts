/**
 * Writes a whole HTTP/1.1 response on the raw socket of an upgrade: a refused upgrade's
 * problem details, or the upstream's non-101 answer to one.
 *
 * After Node's `upgrade` event there is no `ServerResponse`: the response is written by
 * hand (RFC 9112 §4), always with an exact `Content-Length` (none for 204 and 304, which
 * have no body) and `Connection: close`, and the socket is closed once the bytes are
 * sent — the client asked to leave HTTP on this connection, so nothing follows. A
 * problem has the contract's problem-details body (RFC 9457 semantics, the contract's
 * field names). The close is a lingering one (`lib/lingeringClose.ts`): a client still
 * sending reads the answer. A socket that already carried part of this request's
 * response, or cannot be written, is destroyed without a word.
 *
 * "This request's": a keep-alive socket may have carried earlier, complete responses.
 * `markRequestStart` notes how many bytes the socket had written when the request began
 * (the upgrade handler and the parser-error handler call it); only bytes beyond that
 * mark count.
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { type PortariaError, problemJson } from '../errors.js';
import { lingeringClose } from '../lib/lingeringClose.js';

const REQUEST_START = Symbol('portaria.requestStart');
type MarkedSocket = Duplex & { bytesWritten?: number; [REQUEST_START]?: number };

/** Notes where the current request's response would begin on this socket. */
export function markRequestStart(socket: Duplex): void {
  const marked = socket as MarkedSocket;
  marked[REQUEST_START] = marked.bytesWritten ?? 0;
}

/** True when nothing of the current request's response has been written yet. */
export function isSocketPristine(socket: Duplex): boolean {
  const marked = socket as MarkedSocket;
  const written = marked.bytesWritten;
  return (
    socket.writable &&
    !socket.destroyed &&
    (written === undefined || written === (marked[REQUEST_START] ?? 0))
  );
}

/**
 * Writes a problem and closes; `requestId`, when known, is echoed as `X-Request-Id`, and
 * the entry's `challenge` as `WWW-Authenticate`. False when the socket could not take it
 * (then it is destroyed).
 */
export function writeSocketProblem(
  socket: Duplex,
  error: PortariaError,
  instancia: string,
  problemTypeBase: string,
  options: {
    readonly requestId?: string;
    readonly challenge?: string | undefined;
    readonly dpopNonce?: string | undefined;
    /** `x-fapi-interaction-id` to echo (profile fapi-br). */
    readonly interactionId?: string | undefined;
  } = {},
): boolean {
  if (!isSocketPristine(socket)) {
    socket.destroy();
    return false;
  }
  const body = problemJson(error, problemTypeBase, instancia);
  let head =
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\n` +
    'content-type: application/problem+json\r\n' +
    'cache-control: no-store\r\n' +
    'x-content-type-options: nosniff\r\n' +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    'connection: close\r\n';
  if (error.headers !== undefined) {
    for (const [name, value] of Object.entries(error.headers)) {
      if (name !== 'connection') head += `${name}: ${value}\r\n`;
    }
  }
  if (options.challenge !== undefined) head += `www-authenticate: ${options.challenge}\r\n`;
  if (options.dpopNonce !== undefined) head += `dpop-nonce: ${options.dpopNonce}\r\n`;
  if (options.requestId !== undefined) head += `x-request-id: ${options.requestId}\r\n`;
  if (options.interactionId !== undefined) {
    head += `x-fapi-interaction-id: ${options.interactionId}\r\n`;
  }
  socket.write(`${head}\r\n${body}`);
  lingeringClose(socket);
  return true;
}

/**
 * Writes `status` with `fields` (end-to-end fields only: the caller applied the header
 * policy; any `content-length` among them is replaced) and `body`, then closes. False
 * when the socket could not take it (then it is destroyed).
 */
export function writeSocketResponse(
  socket: Duplex,
  status: number,
  fields: Readonly<Record<string, string | string[]>>,
  body: Buffer,
): boolean {
  if (!isSocketPristine(socket)) {
    socket.destroy();
    return false;
  }
  // RFC 9110 §6.4.1: a 204 or 304 has no content, and no length is sent for it.
  const bodiless = status === 204 || status === 304;
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${fieldLines(fields, 'content-length')}`;
  if (!bodiless) head += `content-length: ${body.length}\r\n`;
  head += 'connection: close\r\n\r\n';
  const bytes = Buffer.from(head, 'latin1');
  socket.write(bodiless ? bytes : Buffer.concat([bytes, body]));
  lingeringClose(socket);
  return true;
}

/** `name: value\r\n` for every field but `skip` (a list value gives one line per item). */
function fieldLines(fields: Readonly<Record<string, string | string[]>>, skip?: string): string {
  let lines = '';
  for (const name in fields) {
    if (name === skip) continue;
    const value = fields[name] as string | string[];
    if (typeof value === 'string') lines += `${name}: ${value}\r\n`;
    else for (const item of value) lines += `${name}: ${item}\r\n`;
  }
  return lines;
}
