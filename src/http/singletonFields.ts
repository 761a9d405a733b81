/**
 * The header fields a request carries once, counted in one pass over its raw lines (Node
 * keeps only the first of repeated `Host` and `Authorization` lines in `req.headers`, so a
 * component that keeps the last could see another value): `Host` exactly once and
 * well-formed (RFC 9112 §3.2, RFC 9110 §7.2), `Content-Type` at most once (RFC 9110 §8.3);
 * the number of `Authorization` lines is returned for the credentials step, which refuses
 * more than one.
 *
 * RFC 9112 §3.2 requires a 400 for a missing, repeated or invalid `Host`, and
 * `X-Forwarded-Host` is made from it: `a, evil.example` is two hosts to a framework that
 * splits the field. The connection is closed after that answer; Node's own
 * `requireHostHeader` is off so that this check answers with problem details. Of two
 * `Content-Type` lines Node keeps the first while a component in front may judge the body
 * by the last.
 */
import type { IncomingMessage } from 'node:http';
import { PortariaError } from '../errors.js';

/** host [":" port]: a reg-name of unreserved characters, or an IPv6 literal (no zone). */
const HOST = /^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{0,5})?$/;

/**
 * Refuses a repeated `Content-Type` and a missing, repeated or malformed `Host`; returns how
 * many `Authorization` lines came (counted in the same pass).
 */
export function checkSingletonFieldsAndCountAuthorization(req: IncomingMessage): number {
  const raw = req.rawHeaders;
  let hosts = 0;
  let authorizations = 0;
  let contentTypes = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
    else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations++;
    else if (name.length === 12 && name.toLowerCase() === 'content-type') contentTypes++;
  }
  if (contentTypes > 1) {
    throw new PortariaError('invalid-request', 'Send at most one Content-Type header.', {
      reason: 'multiple-content-type',
      headers: { connection: 'close' },
    });
  }
  if (hosts > 1) {
    throw new PortariaError('invalid-request', 'Send exactly one Host header.', {
      reason: 'multiple-host',
      headers: { connection: 'close' },
    });
  }
  if (hosts === 0 && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
    throw new PortariaError('invalid-request', 'An HTTP/1.1 request must carry a Host header.', {
      reason: 'missing-host',
      headers: { connection: 'close' },
    });
  }
  const host = req.headers.host;
  if (host !== undefined && !HOST.test(host)) {
    throw new PortariaError('invalid-request', 'The Host header is not a valid host and port.', {
      reason: 'invalid-host',
      headers: { connection: 'close' },
    });
  }
  return authorizations;
}
