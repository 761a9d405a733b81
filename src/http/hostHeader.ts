/**
 * RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without a `Host` field
 * and to any request with more than one `Host` field line. Node keeps the first of two
 * `Host` lines and drops the second, so the gateway (which sets `X-Forwarded-Host` from
 * it) and a component that keeps the last could each see another host; Node's own
 * answer to a missing `Host` is a bare 400 (`requireHostHeader` is off so that this
 * check answers both with problem details). The connection is closed after the answer.
 */
import type { IncomingMessage } from 'node:http';
import { PortariaError } from '../errors.js';

export function assertOneHost(req: IncomingMessage): void {
  const raw = req.rawHeaders;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') count++;
  }
  if (count > 1) {
    throw new PortariaError('invalid-request', 'Send exactly one Host header.', {
      reason: 'multiple-host',
      headers: { connection: 'close' },
    });
  }
  if (count === 0 && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
    throw new PortariaError('invalid-request', 'An HTTP/1.1 request must carry a Host header.', {
      reason: 'missing-host',
      headers: { connection: 'close' },
    });
  }
}
