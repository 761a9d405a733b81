/**
 * The header-line limit. Node keeps at most `maxHeadersCount` lines of a request and,
 * before Node 24, drops the rest without a word: a `Content-Length` among them is lost
 * and the body is read as the next request. Both listeners set that count to
 * `server.maxHeaderLines`; a request that reaches it may have lost lines and is refused
 * (431, connection closed) before anything reads it. Newer Node refuses past the count
 * in its parser (`HPE_HEADER_OVERFLOW`, the same 431 from the parser-error handler).
 */
import type { IncomingMessage } from 'node:http';
import { PortariaError } from '../errors.js';

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
