/**
 * Answers requests Node's parser refuses before any handler runs — headers too large
 * (431), a request too slow to arrive (408), malformed framing such as both
 * `Content-Length` and `Transfer-Encoding` (RFC 9112 §6.1: a request smuggling vector;
 * 400) — with problem details and `Connection: close` instead of Node's bare default.
 *
 * Bytes the parser refuses *after* a complete request (one byte more than its
 * `Content-Length`, data after `Connection: close`) never replace that request's
 * answer: the request may already have been carried out upstream, and a client told
 * 400 would send it again. Its answer goes out with `Connection: close`, the connection
 * closes after it, and the stray bytes are logged as a count.
 *
 * A TLS failure on an established connection (a renegotiation attempt, a record that
 * does not decrypt) is no HTTP refusal: nothing more can be written, the connection is
 * closed and the failure logged.
 */
import type { Duplex } from 'node:stream';
import { type FailureReason, PortariaError } from '../errors.js';
import { isLingering, lingeringClose } from '../lib/lingeringClose.js';
import { markRequestStart, writeSocketProblem } from '../proxy/socketProblem.js';
import { instanceOf, pathOnly } from './replies.js';
import { GatewayResponse } from './requestScope.js';

/** What Node's parser attaches to its errors (`prepareError` in Node's http server). */
type ParserError = NodeJS.ErrnoException & {
  reason?: string;
  bytesParsed?: number;
  rawPacket?: Buffer;
};

export function createClientErrorHandler(
  problemTypeBase: string,
  onError: (reason: FailureReason) => void,
  onStrayBytes: (requestId: string, bytes: number) => void,
  onTlsError: (code: string) => void = () => {},
) {
  return (error: ParserError, socket: Duplex): void => {
    socket.on('error', () => {});
    if (isTlsError(error.code)) {
      onTlsError(error.code);
      socket.destroy();
      return;
    }
    // Answered and closing in stages: a later timeout check or parser error of the
    // same connection must not cut the close short (the client may not have read yet).
    if (isLingering(socket)) return;
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    // A response still being written on this keep-alive socket (Node's own test): nothing
    // can be added after it. Otherwise earlier responses are complete: ours starts here.
    const current = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })
      ._httpMessage;
    if (current instanceof GatewayResponse && current.req.complete) {
      answerThenClose(current, socket);
      onStrayBytes(current.scope.id, strayByteCount(error));
      return;
    }
    const problem = problemFor(error);
    onError(problem.reason);
    if (current?.headersSent === true) {
      socket.destroy();
      return;
    }
    markRequestStart(socket);
    // A request in progress (a slow upload cut by requestTimeoutMs): its access line must
    // say what the client got, not that the client went away, and the answer carries its
    // path and request id like any other. A request the parser refused has neither.
    if (current instanceof GatewayResponse) {
      const scope = current.scope;
      scope.socketStatus = problem.status;
      scope.reason = problem.reason;
      const instance = instanceOf(pathOnly(current.req.url), scope.id);
      writeSocketProblem(socket, problem, instance, problemTypeBase, { requestId: scope.id });
      return;
    }
    writeSocketProblem(socket, problem, '#unparsed', problemTypeBase);
  };
}

function isTlsError(code: string | undefined): code is string {
  return code !== undefined && (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_'));
}

/** Lets the complete request's answer go out, and nothing after it on this connection. */
function answerThenClose(res: GatewayResponse, socket: Duplex): void {
  if (!res.headersSent) res.shouldKeepAlive = false;
  // Node closes after an answer that says `Connection: close`; one already sent saying
  // keep-alive is followed by a close here, once it is written.
  else res.once('finish', () => lingeringClose(socket));
  // The parser is done with this connection: what else arrives is not read.
  socket.removeAllListeners('data');
  socket.on('data', () => {});
}

/**
 * The refused chunk's bytes from the first one the parser refused. llhttp reports the
 * offending byte's position, except after `Connection: close`, where it reports the
 * position past it.
 */
function strayByteCount(error: ParserError): number {
  const packet = error.rawPacket?.length ?? 0;
  const first = (error.bytesParsed ?? 0) - (error.code === 'HPE_CLOSED_CONNECTION' ? 1 : 0);
  return Math.max(0, packet - first);
}

function problemFor(error: ParserError): PortariaError {
  // llhttp names both-length-headers by the header it met second; its reason text is stable.
  if (error.reason?.includes("can't be present with")) {
    return new PortariaError(
      'invalid-request',
      'Content-Length and Transfer-Encoding must not both be sent.',
      { reason: 'cl-and-te' },
    );
  }
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new PortariaError('headers-too-large', 'The request headers are too large.', {
        reason: 'header-overflow',
      });
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new PortariaError('request-timeout', 'The request took too long to arrive.', {
        reason: 'request-timeout',
      });
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return new PortariaError('invalid-request', 'Content-Length must be sent once.', {
        reason: 'duplicate-content-length',
      });
    default:
      return new PortariaError('invalid-request', 'The request is not valid HTTP/1.1.', {
        reason: 'bad-framing',
      });
  }
}
