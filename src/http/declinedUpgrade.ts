/**
 * Which `Upgrade` offers the gateway takes up: WebSocket only. Any other offer (an HTTP/2
 * client's `Upgrade: h2c`) is ignored, as RFC 9110 §7.8 allows, and the request answered
 * as the HTTP/1.1 request it also is. Node 20 and 22 detach the parser before we can
 * decline, so there the request is answered here from Node's own parse of its head (never
 * a re-parse), its body read by `Content-Length` only, and the connection closed after.
 *
 * A head rebuilt from `rawHeaders` would miss whatever Node dropped (a dropped
 * `Content-Length` turns the body into a request); a chunked body would need a second
 * parser, so it is refused with 400; and with the parser gone, nothing after the body may
 * be read as a request. A body that stops arriving is cut after `server.requestTimeoutMs`
 * with the 408 of a slow upload.
 */
import { IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { PortariaError } from '../errors.js';
import { GatewayResponse } from './requestScope.js';

type Handler = (req: IncomingMessage, res: GatewayResponse) => void;

/** A request answered outside Node's parser (its socket was handed over by `upgrade`). */
class DeclinedUpgradeRequest extends IncomingMessage {}

export interface DeclinedUpgrades {
  /** `upgrade` listener for offers other than WebSocket. */
  answer(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Destroys the connections still open (the shutdown grace ended). */
  closeAll(): void;
}

export function declinedUpgrades(
  server: Server,
  handlers: { readonly request: Handler; readonly expectingContinue: Handler },
  requestTimeoutMs: number,
): DeclinedUpgrades {
  const open = new Set<Duplex>();
  return {
    answer(req, socket, head) {
      socket.on('error', ignoreSocketError);
      open.add(socket);
      socket.once('close', () => open.delete(socket));
      const copy = copyOf(req, socket as Socket);
      const res = new GatewayResponse(copy);
      res.shouldKeepAlive = false;
      res.assignSocket(socket as Socket);
      // The answer is the last thing on this connection (its parser is gone).
      res.once('finish', () => (socket as Socket).destroySoon());
      readBody(copy, socket, head, requestTimeoutMs, () => {
        const error = Object.assign(new Error('request timeout'), {
          code: 'ERR_HTTP_REQUEST_TIMEOUT',
        });
        server.emit('clientError', error, socket);
      });
      if (copy.headers.expect?.toLowerCase() === '100-continue') {
        handlers.expectingContinue(copy, res);
      } else {
        handlers.request(copy, res);
      }
    },
    closeAll() {
      for (const socket of open) socket.destroy();
    },
  };
}

/** The request as Node parsed it, with a body of its own to fill. */
function copyOf(req: IncomingMessage, socket: Socket): DeclinedUpgradeRequest {
  const copy = new DeclinedUpgradeRequest(socket);
  copy.httpVersionMajor = req.httpVersionMajor;
  copy.httpVersionMinor = req.httpVersionMinor;
  copy.httpVersion = req.httpVersion;
  copy.method = req.method as string;
  copy.url = req.url as string;
  copy.rawHeaders = req.rawHeaders;
  copy.headers = req.headers;
  return copy;
}

/**
 * Pushes exactly `Content-Length` bytes (from `head`, then the socket) into `req`;
 * nothing for a chunked body, which the framing check refuses.
 */
function readBody(
  req: DeclinedUpgradeRequest,
  socket: Duplex,
  head: Buffer,
  timeoutMs: number,
  onTimeout: () => void,
): void {
  let remaining =
    req.headers['transfer-encoding'] === undefined
      ? Number(req.headers['content-length'] ?? '0')
      : 0;
  const take = (chunk: Buffer): void => {
    if (remaining === 0) return;
    const part = chunk.length <= remaining ? chunk : chunk.subarray(0, remaining);
    remaining -= part.length;
    if (!req.push(part)) socket.pause();
    if (remaining === 0) done();
  };
  const done = (): void => {
    clearTimeout(timer);
    socket.removeListener('data', take);
    socket.removeListener('end', cut);
    socket.removeListener('close', cut);
    req.complete = true;
    req.push(null);
  };
  const cut = (): void => {
    clearTimeout(timer);
    req.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
  };
  const timer = setTimeout(onTimeout, timeoutMs);
  timer.unref();
  if (remaining === 0) {
    done();
    return;
  }
  socket.on('data', take);
  socket.once('end', cut);
  socket.once('close', cut);
  if (head.length > 0) take(head);
  // IncomingMessage's own `_read` resumes its socket when the reader wants more.
  socket.resume();
}

function ignoreSocketError(): void {}

/** True for a request whose body the gateway reads itself (see above). */
export function isDeclinedUpgrade(req: IncomingMessage): boolean {
  return req instanceof DeclinedUpgradeRequest;
}

/** The framing check's refusal of a chunked body in a declined offer. */
export function chunkedOfferRefused(): PortariaError {
  return new PortariaError(
    'invalid-request',
    'An upgrade offer with a chunked body is not supported; send the request without Upgrade.',
    { reason: 'upgrade-offer-chunked', headers: { connection: 'close' } },
  );
}
