/**
 * The source the token limits count: the TCP peer, or — only when
 * `server.trustForwardedHeaders` says a proxy we control sits in front — the last
 * `X-Forwarded-For` entry, the one that proxy appended for the peer it saw. Entries
 * before it were written by whoever sent the request and are never trusted (taking the
 * first one would let every request pick its own address and escape the limits). An
 * entry that is not an IP address falls back to the TCP peer.
 *
 * An IPv4 address counts on its own (IPv4-mapped IPv6, `::ffff:192.0.2.1`, and the NAT64
 * well-known prefix, `64:ff9b::192.0.2.1`, as the IPv4 address). An IPv6 address counts
 * as its /64 network, written `2001:db8:0:1::/64`: one subscriber, one server or one
 * cloud instance is routinely given a whole /64, so keying on the full address would
 * hand any of them 2^64 fresh buckets and back-off pairs.
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
    if (isIP(last) !== 0) return limitKeyOf(last);
  }
  return peer === undefined || peer === '' || isIP(peer) === 0 ? UNKNOWN : limitKeyOf(peer);
}

/** `address` is a valid IP address (isIP ≠ 0). */
function limitKeyOf(address: string): string {
  if (isIP(address) === 4) return address;
  const groups = ipv6Groups(address);
  // IPv4-mapped (::ffff:a.b.c.d, in any spelling) or translated by NAT64/SIIT with the
  // well-known prefix (64:ff9b::a.b.c.d, RFC 6052): an IPv4 client, counted as such.
  const head = groups.slice(0, 6).join(':');
  if (head === '0:0:0:0:0:ffff' || head === '64:ff9b:0:0:0:0') {
    const [high = 0, low = 0] = groups.slice(6).map((g) => Number.parseInt(g, 16));
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  // The /64: the first four groups; the rest is zero, written `::` (RFC 5952).
  const prefix = groups.slice(0, 4);
  while (prefix.at(-1) === '0') prefix.pop();
  return `${prefix.join(':')}::/64`;
}

/**
 * The eight groups of a valid IPv6 address, lowercase hex without leading zeros; a zone
 * (`%eth0`) is dropped and an IPv4 tail becomes the two groups it stands for.
 */
export function ipv6Groups(address: string): string[] {
  const zone = address.indexOf('%');
  const bare = (zone === -1 ? address : address.slice(0, zone)).toLowerCase();
  const split = (part: string): string[] => {
    if (part === '') return [];
    const groups = part.split(':');
    const last = groups.at(-1) ?? '';
    if (!last.includes('.')) return groups;
    const [a = 0, b = 0, c = 0, d = 0] = last.split('.').map(Number);
    return [...groups.slice(0, -1), ((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
  };
  const gap = bare.indexOf('::');
  let groups = split(bare);
  if (gap !== -1) {
    const head = split(bare.slice(0, gap));
    const tail = split(bare.slice(gap + 2));
    groups = [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  }
  return groups.map((group) => Number.parseInt(group, 16).toString(16));
}
