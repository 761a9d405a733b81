/**
 * Answers requests Node's parser refuses before any handler runs — headers too large
 * (431), a request too slow to arrive (408), malformed framing such as both
 * `Content-Length` and `Transfer-Encoding` (RFC 9112 §6.1: a request smuggling vector;
 * 400) — with problem details and `Connection: close` instead of Node's bare default.
 */
import type { Duplex } from 'node:stream';
import { PortariaError } from '../errors.js';
import { markRequestStart, writeSocketProblem } from '../proxy/socketProblem.js';
import { instanceOf, pathOnly } from './replies.js';
import { GatewayResponse } from './requestScope.js';

export function createClientErrorHandler(
  problemTypeBase: string,
  onError: (reason: string) => void,
) {
  return (error: NodeJS.ErrnoException & { reason?: string }, socket: Duplex): void => {
    socket.on('error', () => {});
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const problem = problemFor(error);
    onError(problem.reason);
    // A response still being written on this keep-alive socket (Node's own test): nothing
    // can be added after it. Otherwise earlier responses are complete: ours starts here.
    const current = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })
      ._httpMessage;
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
      writeSocketProblem(socket, problem, instance, problemTypeBase, scope.id);
      return;
    }
    writeSocketProblem(socket, problem, '#unparsed', problemTypeBase);
  };
}

function problemFor(error: NodeJS.ErrnoException & { reason?: string }): PortariaError {
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
