/**
 * The source address the token limits count: the TCP peer, or — only when
 * `server.trustForwardedHeaders` says a proxy we control sits in front — the last
 * `X-Forwarded-For` entry, the one that proxy appended for the peer it saw. Entries
 * before it were written by whoever sent the request and are never trusted (taking the
 * first one would let every request pick its own address and escape the limits). An
 * entry that is not an IP address falls back to the TCP peer.
 *
 * IPv4-mapped IPv6 (`::ffff:192.0.2.1`) counts as the IPv4 address, and IPv6 is
 * lowercased, so one client is one key whichever way the socket reports it.
 */
import { isIP } from 'node:net';

const UNKNOWN = 'unknown';

export function sourceAddress(
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
  trustForwarded: boolean,
): string {
  if (trustForwarded && forwardedFor !== undefined) {
    const header = typeof forwardedFor === 'string' ? forwardedFor : forwardedFor.join(',');
    const last = header.slice(header.lastIndexOf(',') + 1).trim();
    if (isIP(last) !== 0) return normalize(last);
  }
  return peer === undefined || peer === '' ? UNKNOWN : normalize(peer);
}

function normalize(address: string): string {
  const lower = address.toLowerCase();
  if (lower.startsWith('::ffff:') && isIP(lower.slice(7)) === 4) return lower.slice(7);
  return lower;
}
