/**
 * Answers a refused upgrade on the raw socket with problem details.
 *
 * After Node's `upgrade` event there is no `ServerResponse`: the HTTP/1.1 response is
 * written by hand (RFC 9112 §4) with the contract's problem-details body (RFC 9457
 * semantics, the contract's field names), `Connection: close`, and the socket is closed
 * once the bytes are flushed. A socket that already carried a response, or cannot be
 * written, is destroyed without a word.
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { PortariaError } from '../errors.js';

/** True when nothing has been written to the socket yet (no response started). */
export function isSocketPristine(socket: Duplex): boolean {
  const written = (socket as Duplex & { bytesWritten?: number }).bytesWritten;
  return socket.writable && !socket.destroyed && (written === undefined || written === 0);
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
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    'connection: close\r\n';
  if (error.headers !== undefined) {
    for (const [name, value] of Object.entries(error.headers)) head += `${name}: ${value}\r\n`;
  }
  socket.end(`${head}\r\n${body}`, () => socket.destroy());
}
