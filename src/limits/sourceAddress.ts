/**
 * The source the token limits count, from the client's address as `server.trustedProxies`
 * decides it (`lib/trustedProxies.ts`: the TCP peer, or behind trusted proxies the first
 * `X-Forwarded-For` hop from the right that is not one of them; entries further left
 * were written by whoever sent the request and would let it pick its own bucket).
 *
 * An IPv4 address counts on its own (IPv4-mapped IPv6, `::ffff:192.0.2.1`, and the NAT64
 * well-known prefix, `64:ff9b::192.0.2.1`, as the IPv4 address). An IPv6 address counts
 * as its /64 network, written `2001:db8:0:1::/64`: one subscriber, one server or one
 * cloud instance is routinely given a whole /64, so keying on the full address would
 * hand any of them 2^64 fresh buckets and back-off pairs.
 */
import { isIP } from 'node:net';

const UNKNOWN = 'unknown';

export function sourceAddress(client: string | undefined): string {
  return client === undefined || isIP(client) === 0 ? UNKNOWN : limitKeyOf(client);
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
