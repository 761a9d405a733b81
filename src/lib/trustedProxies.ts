/**
 * The client's address behind the proxies the operator trusts (`server.trustedProxies`),
 * with proxy-addr, the library Express uses: starting at the TCP peer and walking
 * `X-Forwarded-For` from the right, each address that is a trusted proxy hands over to
 * the entry it appended; the first one that is not is the client. Everything left of it
 * was written by whoever sent the request and is never read. A peer that is not trusted
 * is the client itself, whatever its `X-Forwarded-For` says.
 *
 * Entries are IP addresses, CIDRs (`10.0.0.0/8`, `fd00::/8`), IPv4 address/netmask, or
 * the names `loopback`, `linklocal`, `uniquelocal`. The list is compiled once; a lookup
 * for an untrusted peer reads no header at all.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import proxyAddr from 'proxy-addr';

export const PROXY_RANGE_NAMES: readonly string[] = ['loopback', 'linklocal', 'uniquelocal'];

/** Why `entry` is not a `server.trustedProxies` entry, or null. */
export function trustedProxyProblem(entry: string): string | null {
  if (PROXY_RANGE_NAMES.includes(entry)) return null;
  const slash = entry.lastIndexOf('/');
  // Only the plain notations: ipaddr.js would also take `0x7f.1` or `2130706433`.
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const range = slash === -1 ? '' : entry.slice(slash + 1);
  const plain =
    isIP(address) !== 0 && (slash === -1 || /^\d{1,3}$/.test(range) || isIP(range) === 4);
  if (plain) {
    try {
      proxyAddr.compile(entry);
      return null;
    } catch {
      // Reported below, with what is accepted.
    }
  }
  return `"${entry}" is not an IP address, a CIDR (10.0.0.0/8, fd00::/8) or one of ${PROXY_RANGE_NAMES.join(', ')}`;
}

/** The parts of a request the walk reads (an `IncomingMessage` has them). */
interface Hop {
  readonly socket: { readonly remoteAddress?: string | undefined };
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

export class TrustedProxies {
  readonly #trust: (address: string, index: number) => boolean;
  readonly #none: boolean;

  /** `entries` are valid (`trustedProxyProblem` is null for each): config validation. */
  constructor(entries: readonly string[]) {
    this.#none = entries.length === 0;
    const trust = proxyAddr.compile([...entries]);
    // ipaddr.js also reads `2130706433` or `0x7f.1` as 127.0.0.1: a hop is trusted only
    // when written as an address.
    this.#trust = (address, index) => isIP(address) !== 0 && trust(address, index);
  }

  /** True when `peer` is one of the trusted proxies. */
  trusts(peer: string | undefined): boolean {
    return !this.#none && peer !== undefined && this.#trust(peer, 0);
  }

  /**
   * The client's address first, then each trusted proxy in order, the peer last; just
   * `[peer]` when the peer is not trusted. An entry that is not an IP address (a port,
   * brackets, garbage) ends the walk at the trusted hop that wrote it.
   */
  hops(peer: string | undefined, forwardedFor: string | string[] | undefined): string[] {
    const from = peer ?? '';
    if (forwardedFor === undefined || !this.trusts(from)) return [from];
    const hop: Hop = {
      socket: { remoteAddress: from },
      headers: {
        'x-forwarded-for': typeof forwardedFor === 'string' ? forwardedFor : forwardedFor.join(','),
      },
    };
    const walked = proxyAddr.all(hop as IncomingMessage, this.#trust);
    if (walked.length > 1 && isIP(walked.at(-1) as string) === 0) walked.pop();
    return walked.reverse();
  }

  /** The client's address (`hops(…)[0]`); '' when the connection has none. */
  clientAddress(req: Hop): string {
    const peer = req.socket.remoteAddress;
    if (!this.trusts(peer)) return peer ?? '';
    return this.hops(peer, req.headers['x-forwarded-for'])[0] as string;
  }
}
