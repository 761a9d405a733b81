/**
 * Header hygiene between client, gateway and upstream, compiled once from the config:
 * hop-by-hop and `Connection`-listed fields dropped both ways (RFC 9110 §7.6.1); towards the
 * upstream, the reserved identity namespace (any `_` spelling) cleared then set from the
 * verified principal, caller-written address/host/path fields removed, `X-Forwarded-*` and
 * `Forwarded` (RFC 7239) always the gateway's. The hot path builds flat name/value lists
 * (what undici's dispatch and Node's `writeHead` take).
 *
 * A name is matched with `_` read as `-`: CGI-style servers read `X_Client_Id` as
 * `X-Client-Id`. The identity headers are set after all stripping, so `Connection:
 * x-client-id` cannot remove them. `Host` and `Expect` are dropped (the upstream client
 * sets the host; the gateway answered `100-continue` itself). A trusted proxy keeps its other
 * `X-Forwarded-*` and `X-Original-URL` / `X-Rewrite-URL`; any other peer is the client,
 * and those fields, which frameworks honour to rebuild URLs, are removed. A claim sets
 * its header when it is a string, an array of strings (joined by a space) or a finite
 * number, percent-encoded by `identityHeaderValue`; the names `certificate.subject`,
 * `certificate.san` and `certificate.thumbprint` map the request's client certificate
 * instead (`certificateIdentity.ts`), so an upstream learns who connected, from the
 * gateway and never from the caller. The client-certificate fields a
 * proxy sets are removed from every request, a trusted proxy's too: the gateway reads
 * and checks them; an upstream must never read one unchecked.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { CALLER_HEADERS, headerKey } from '../config/callerHeaders.js';
import type { ClientCertificate } from '../domain/clientCertificate.js';
import type { Principal } from '../domain/principal.js';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import { compileIdentityHeaders } from './identityHeaders.js';

export type ForwardedProto = 'http' | 'https';

export interface UpstreamRequestContext {
  readonly principal: Principal;
  /** The client certificate of the request (TLS, or a trusted proxy's header); null: none. */
  readonly certificate?: ClientCertificate | null;
  readonly requestId: string;
  /** The TCP peer's address; the client's is derived from it (`server.trustedProxies`). */
  readonly peerAddress: string | undefined;
  /** The `Host` the client used, for `X-Forwarded-Host`. */
  readonly host: string | undefined;
  readonly proto: ForwardedProto;
  /** `x-fapi-interaction-id` to send when the client sent none (profile fapi-br). */
  readonly interactionId?: string | undefined;
}

export type OutgoingHeaders = Record<string, string | string[]>;
/** `[name, value, name, value, …]`; every name once. */
export type HeaderList = (string | string[])[];

export interface HeaderPolicyOptions {
  /** Claim name → header name. */
  readonly identityHeaders: Readonly<Record<string, string>>;
  readonly forwardAuthorization: boolean;
  /** `server.trustedProxies`, compiled. */
  readonly trustedProxies: TrustedProxies;
  /** Caller-written fields let through (`forwardCallerHeaders`), lowercase. */
  readonly forwardCallerHeaders: readonly string[];
  /**
   * Client-certificate fields a proxy sets (`config/certificateHeaders.ts`), lowercase:
   * removed from every request, from a trusted proxy too, since the gateway consumes them.
   */
  readonly certificateHeaders?: readonly string[];
}

export interface HeaderPolicy {
  upstreamRequestHeaders(
    incoming: IncomingHttpHeaders,
    ctx: UpstreamRequestContext,
  ): OutgoingHeaders;
  /** `upstreamRequestHeaders` as a flat list (the forwarder's form). */
  upstreamRequestHeaderList(incoming: IncomingHttpHeaders, ctx: UpstreamRequestContext): HeaderList;
  downstreamResponseHeaders(
    upstream: Readonly<Record<string, string | string[] | undefined>>,
    requestId: string,
  ): OutgoingHeaders;
  /** `downstreamResponseHeaders` as a flat list (the forwarder's form). */
  downstreamResponseHeaderList(
    upstream: Readonly<Record<string, string | string[] | undefined>>,
    requestId: string,
  ): HeaderList;
  /** True when `name` (any case, `_` or `-`) is a configured identity header. */
  isIdentityHeader(name: string): boolean;
}

export const HOP_BY_HOP_HEADERS: readonly string[] = Object.freeze([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

const REQUEST_ID = 'x-request-id';
/** FAPI 1.0 Part 1 §6.2.1: the interaction id travels to the resource (profile fapi-br). */
const INTERACTION_ID = 'x-fapi-interaction-id';
const XFF = 'x-forwarded-for';
const XFP = 'x-forwarded-proto';
const XFH = 'x-forwarded-host';
const REAL_IP = 'x-real-ip';
const FORWARDED = 'forwarded';
/** Always set by the gateway from the client's address it decided. */
const ADDRESS_FIELDS = [XFF, REAL_IP, FORWARDED];
/** Kept from a trusted proxy, removed from anyone else. */
const PROXY_FIELDS = [XFP, XFH, 'x-forwarded-port', 'x-original-url', 'x-rewrite-url'];
/** Every field named so is proxy-set; from an untrusted peer none reaches the upstream. */
const FORWARDED_PREFIX = 'x-forwarded';
/** RFC 9110 §5.6.2 tchar, by character code (a loop: no regular expression per request). */
const TCHAR: Uint8Array = (() => {
  const table = new Uint8Array(128);
  for (const c of "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") {
    table[c.charCodeAt(0)] = 1;
  }
  return table;
})();

/** An RFC 9110 §5.6.2 token: a `Forwarded` parameter value that needs no quotes. */
function isToken(value: string): boolean {
  if (value.length === 0) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 128 || TCHAR[c] !== 1) return false;
  }
  return true;
}

const HOP_BY_HOP: ReadonlySet<string> = new Set(HOP_BY_HOP_HEADERS);

const normalizeName = headerKey;

/** A `Forwarded` parameter value (RFC 7239 §4): a token, else a quoted-string. */
function forwardedValue(value: string): string {
  if (isToken(value)) return value;
  return value.includes('"') || value.includes('\\')
    ? `"${value.replace(/["\\]/g, '\\$&')}"`
    : `"${value}"`;
}

/** `for=` of `Forwarded` (RFC 7239 §6): IPv6 in brackets, quoted; none known: `unknown`. */
function forwardedNode(address: string): string {
  if (address === '') return 'unknown';
  return address.includes(':') ? `"[${address}]"` : forwardedValue(address);
}

/**
 * Lowercased field names nominated by `Connection`, or null. The common values
 * (`keep-alive`, `close`, `upgrade`) nominate nothing that is not already hop-by-hop.
 */
function nominatedFields(connection: string | string[] | undefined): readonly string[] | null {
  if (connection === undefined) return null;
  const value = typeof connection === 'string' ? connection : connection.join(',');
  const lower = value.toLowerCase();
  if (lower === 'keep-alive' || lower === 'close' || lower === 'upgrade') return null;
  const out: string[] = [];
  for (const token of lower.split(',')) {
    const name = token.trim();
    if (name !== '' && !HOP_BY_HOP.has(name)) out.push(name);
  }
  return out.length === 0 ? null : out;
}

/**
 * One `Forwarded` element (RFC 7239 §4) for the client's hop: its address and the host
 * and scheme it used, as `X-Forwarded-Host/-Proto` say. A repeated field is not one host.
 */
function forwardedElement(
  client: string,
  host: string | string[] | undefined,
  proto: string | string[],
): string {
  let element = `for=${forwardedNode(client)}`;
  if (typeof host === 'string' && host !== '') element += `;host=${forwardedValue(host)}`;
  if (typeof proto === 'string' && isToken(proto)) element += `;proto=${proto}`;
  return element;
}

/**
 * `forwardedElement`, remembering the last one made: a gateway's requests mostly come
 * from the same few clients under the same host, and the element's token checks and
 * quoting (regular expressions) cost more than comparing three short strings.
 */
function lastForwardedElement(): typeof forwardedElement {
  let lastClient = '';
  let lastHost: string | string[] | undefined;
  let lastProto: string | string[] = '';
  let last: string | null = null;
  return (client, host, proto) => {
    if (last !== null && client === lastClient && host === lastHost && proto === lastProto) {
      return last;
    }
    last = forwardedElement(client, host, proto);
    lastClient = client;
    lastHost = host;
    lastProto = proto;
    return last;
  };
}

function toObject(list: HeaderList): OutgoingHeaders {
  const out: OutgoingHeaders = Object.create(null);
  for (let i = 0; i < list.length; i += 2)
    out[list[i] as string] = list[i + 1] as string | string[];
  return out;
}

export function createHeaderPolicy(opts: HeaderPolicyOptions): HeaderPolicy {
  const identity = compileIdentityHeaders(opts.identityHeaders);
  const proxies = opts.trustedProxies;
  const passed = new Set(opts.forwardCallerHeaders.map(normalizeName));

  // Removed from every forwarded request; identity headers are set again afterwards. The
  // default identity names stay reserved under a custom mapping: an upstream written
  // against the defaults must never read a value the client chose.
  const requestDrop = new Set([
    ...HOP_BY_HOP_HEADERS,
    'host',
    'expect',
    REQUEST_ID,
    ...identity.reserved,
  ]);
  if (!opts.forwardAuthorization) requestDrop.add('authorization');
  for (const name of opts.certificateHeaders ?? []) requestDrop.add(normalizeName(name));
  for (const name of ADDRESS_FIELDS) requestDrop.add(name);
  for (const name of CALLER_HEADERS) if (!passed.has(name)) requestDrop.add(name);
  // From a peer that is not a trusted proxy, the proxy fields go too.
  const untrustedDrop: ReadonlySet<string> = new Set([...requestDrop, ...PROXY_FIELDS]);
  // `_` spellings of every field we drop or set are dropped too, passed or trusted or not.
  const guarded: ReadonlySet<string> = new Set([
    ...untrustedDrop,
    ...CALLER_HEADERS,
    'authorization',
  ]);

  const forwarded = lastForwardedElement();

  const upstreamList = (incoming: IncomingHttpHeaders, ctx: UpstreamRequestContext): HeaderList => {
    const out: HeaderList = [];
    const nominated = nominatedFields(incoming.connection);
    const viaProxy = proxies.trusts(ctx.peerAddress);
    const drop = viaProxy ? requestDrop : untrustedDrop;
    let proto: string | string[] = ctx.proto;
    let host: string | string[] | undefined = ctx.host;
    let hasProto = false;
    let hasHost = false;
    for (const name in incoming) {
      const value = incoming[name];
      if (value === undefined || drop.has(name)) continue;
      if (name.includes('_') && guarded.has(name.replaceAll('_', '-'))) continue;
      if (!viaProxy && (name.startsWith(FORWARDED_PREFIX) || name.startsWith('x_forwarded'))) {
        continue;
      }
      if (nominated?.includes(name)) continue;
      // Only reached from a trusted proxy (else they are in untrustedDrop).
      if (name === XFP) {
        hasProto = true;
        proto = value;
      } else if (name === XFH) {
        hasHost = true;
        host = value;
      }
      out.push(name, value);
    }

    let client = ctx.peerAddress ?? '';
    let forwardedFor = client;
    if (viaProxy) {
      const hops = proxies.hops(ctx.peerAddress, incoming[XFF]);
      client = hops[0] as string;
      forwardedFor = hops.join(', ');
    }
    out.push(XFF, forwardedFor, REAL_IP, client);
    if (!hasProto) out.push(XFP, ctx.proto);
    if (!hasHost && ctx.host !== undefined) out.push(XFH, ctx.host);
    out.push(FORWARDED, forwarded(client, host, proto), REQUEST_ID, ctx.requestId);
    // A client's own value passed above (checked to be a UUID); a generated one goes too.
    if (ctx.interactionId !== undefined && incoming[INTERACTION_ID] === undefined) {
      out.push(INTERACTION_ID, ctx.interactionId);
    }

    identity.write(out, ctx.principal, ctx.certificate ?? null);
    return out;
  };

  const downstreamList = (
    upstream: Readonly<Record<string, string | string[] | undefined>>,
    requestId: string,
  ): HeaderList => {
    const out: HeaderList = [];
    const nominated = nominatedFields(upstream.connection);
    for (const name in upstream) {
      const value = upstream[name];
      if (value === undefined || HOP_BY_HOP.has(name) || name === REQUEST_ID) continue;
      if (nominated?.includes(name)) continue;
      out.push(name, value);
    }
    out.push(REQUEST_ID, requestId);
    return out;
  };

  return {
    upstreamRequestHeaders: (incoming, ctx) => toObject(upstreamList(incoming, ctx)),
    upstreamRequestHeaderList: upstreamList,
    downstreamResponseHeaders: (upstream, requestId) =>
      toObject(downstreamList(upstream, requestId)),
    downstreamResponseHeaderList: downstreamList,

    isIdentityHeader(name) {
      return identity.names.includes(normalizeName(name));
    },
  };
}
