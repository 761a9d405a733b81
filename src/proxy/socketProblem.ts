/**
 * Answers a refused upgrade on the raw socket with problem details.
 *
 * After Node's `upgrade` event there is no `ServerResponse`: the HTTP/1.1 response is
 * written by hand (RFC 9112 §4) with the contract's problem-details body (RFC 9457
 * semantics, the contract's field names), `Connection: close`, and the socket is closed
 * once the bytes are flushed. A socket that already carried part of this request's
 * response, or cannot be written, is destroyed without a word.
 *
 * "This request's": a keep-alive socket may have carried earlier, complete responses.
 * `markRequestStart` notes how many bytes the socket had written when the request began
 * (the upgrade handler and the parser-error handler call it); only bytes beyond that
 * mark count.
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { PortariaError } from '../errors.js';

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

export function writeSocketProblem(
  socket: Duplex,
  error: PortariaError,
  instancia: string,
  problemTypeBase: string,
): void {
  if (!isSocketPristine(socket)) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({
    tipo: problemTypeBase + error.code,
    titulo: error.title,
    status: error.status,
    detalhe: error.detail,
    instancia,
  });
  let head =
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\n` +
    'content-type: application/problem+json\r\n' +
    'cache-control: no-store\r\n' +
    'x-content-type-options: nosniff\r\n' +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    'connection: close\r\n';
  if (error.headers !== undefined) {
    for (const [name, value] of Object.entries(error.headers)) head += `${name}: ${value}\r\n`;
  }
  socket.end(`${head}\r\n${body}`, () => socket.destroy());
}
