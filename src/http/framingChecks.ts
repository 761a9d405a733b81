/**
 * Framing checks: what makes a request's message unreadable or ambiguous, refused before
 * anything reads or forwards it (RFC 9112). Each entry runs the checks it needs first.
 *
 * - The header-line limit. Node keeps at most `maxHeadersCount` lines of a request and,
 *   before Node 24, drops the rest without a word: a `Content-Length` among them is lost
 *   and the body is read as the next request. Both listeners set that count to
 *   `server.maxHeaderLines`; a request that reaches it may have lost lines and is
 *   refused (431, connection closed). Newer Node refuses past the count in its parser
 *   (`HPE_HEADER_OVERFLOW`, the same 431 from the parser-error handler).
 * - Transfer codings: only chunked is understood (Node decodes it); a body in another
 *   coding would reach the upstream still encoded, as if it were the content (501). An
 *   HTTP/1.0 message with Transfer-Encoding has faulty framing (400, connection closed).
 * - An upgrade request with a body (RFC 6455 §4.1: the handshake is a GET without
 *   content): the length would be announced upstream and the body never sent.
 */
import type { IncomingMessage } from 'node:http';
import { PortariaError } from '../errors.js';
import { isChunkedOnly } from '../proxy/forwarder.js';
import { chunkedOfferRefused, isDeclinedUpgrade } from './declinedUpgrade.js';

/** True when `req` carries `maxLines` header lines or more. */
export function reachesHeaderLines(req: IncomingMessage, maxLines: number): boolean {
  // rawHeaders holds a name and a value per line.
  return req.rawHeaders.length >= maxLines * 2;
}

/** The refusal: 431, and the connection closes (what followed the head is unknown). */
export function tooManyHeaderLines(): PortariaError {
  return new PortariaError('headers-too-large', 'The request has too many header lines.', {
    reason: 'header-lines',
    headers: { connection: 'close' },
  });
}

/** Refuses a request body in a transfer coding the gateway cannot read (RFC 9112 §6.1). */
export function checkTransferCoding(req: IncomingMessage): void {
  const value = req.headers['transfer-encoding'];
  if (value === undefined) return;
  // An HTTP/1.0 message with Transfer-Encoding has faulty framing, and the connection
  // must close after it (a 1.0 sender cannot know chunked; whatever follows on the
  // connection is not to be trusted as the next request).
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 0) {
    throw new PortariaError(
      'invalid-request',
      'An HTTP/1.0 request must not use Transfer-Encoding.',
      { reason: 'http10-transfer-encoding', headers: { connection: 'close' } },
    );
  }
  // A declined upgrade offer on older Node: no parser left to read a chunked body.
  if (isDeclinedUpgrade(req)) throw chunkedOfferRefused();
  if (isChunkedOnly(value)) return;
  throw new PortariaError('not-implemented', 'Only the chunked transfer coding is supported.', {
    reason: 'transfer-coding',
    headers: { connection: 'close' },
  });
}

/** Refuses an upgrade request that announces a body (RFC 6455 §4.1). */
export function checkUpgradeWithoutBody(req: IncomingMessage): void {
  if (!hasBody(req)) return;
  throw new PortariaError('invalid-request', 'An upgrade request must not carry a body.', {
    reason: 'upgrade-with-body',
  });
}

/** The request announces a body (a chunked one, or a non-zero length). */
export function hasBody(req: IncomingMessage): boolean {
  return (
    req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0'
  );
}
