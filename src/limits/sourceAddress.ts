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
import ipaddr from 'ipaddr.js';

const UNKNOWN = 'unknown';

export function sourceAddress(client: string | undefined): string {
  if (client === undefined) return UNKNOWN;
  const version = isIP(client);
  // isIP takes IPv4 only as four decimal octets without leading zeros: already the
  // form ipaddr.js would write back.
  if (version === 4) return client;
  return version === 0 ? UNKNOWN : limitKeyOf(client);
}

/** `address` is a valid IP address (isIP ≠ 0); parsed by ipaddr.js, as proxy-addr does. */
function limitKeyOf(address: string): string {
  const ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv4') return ip.toString();
  const v6 = ip as ipaddr.IPv6;
  // IPv4-mapped (::ffff:a.b.c.d, in any spelling) or translated by NAT64/SIIT with the
  // well-known prefix (64:ff9b::a.b.c.d, RFC 6052): an IPv4 client, counted as such.
  if (v6.isIPv4MappedAddress() || v6.range() === 'rfc6052') {
    const [high = 0, low = 0] = v6.parts.slice(6);
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  // The /64: the first four groups; the rest is zero, written `::` (RFC 5952).
  const prefix = v6.parts.slice(0, 4).map((group) => group.toString(16));
  while (prefix.at(-1) === '0') prefix.pop();
  return `${prefix.join(':')}::/64`;
}
