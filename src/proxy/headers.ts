/**
 * Header hygiene between client, gateway and upstream, compiled once from the config.
 *
 * Both directions drop the hop-by-hop fields (RFC 9110 §7.6.1: `Connection`, `Keep-Alive`,
 * `Proxy-Connection`, `Proxy-Authenticate`, `Proxy-Authorization`, `TE`, `Trailer`,
 * `Transfer-Encoding`, `Upgrade`) and every field the `Connection` header nominates.
 *
 * Towards the upstream, additionally:
 * - the reserved identity namespace: any incoming field whose name, with `_` read as `-`,
 *   is a configured identity header is removed (servers behind CGI-style gateways read
 *   `X_Client_Id` as `X-Client-Id`); the same `_` rule guards every field the gateway
 *   sets or drops. The identity headers are then set from the verified principal, after
 *   all stripping, so a `Connection: x-client-id` trick cannot remove them;
 * - `Authorization` only if `forwardAuthorization`; `Host` and `Expect` are dropped (the
 *   upstream client sets the upstream's host; Node already answered `100-continue`);
 * - `X-Forwarded-For/-Proto/-Host` (de facto) and `Forwarded` (RFC 7239): trusted only
 *   behind a proxy we control. Trusted: the client IP is appended to `X-Forwarded-For`
 *   and incoming proto/host are kept. Untrusted: all are replaced from the connection,
 *   and `Forwarded`, `X-Forwarded-Port` and `X-Real-IP` are removed;
 * - `X-Request-Id` is always ours.
 *
 * Field names arrive lowercased (Node's parser and undici guarantee it). Claim values:
 * strings as is, arrays of strings joined by a space, finite numbers in decimal; an
 * absent claim, another type, or a value that is not a valid field value (RFC 9110 §5.5)
 * sets no header.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Principal } from '../domain/principal.js';

export type ForwardedProto = 'http' | 'https';

export interface UpstreamRequestContext {
  readonly principal: Principal;
  readonly requestId: string;
  readonly clientIp: string;
  /** The `Host` the client used, for `X-Forwarded-Host`. */
  readonly host: string | undefined;
  readonly proto: ForwardedProto;
}

export type OutgoingHeaders = Record<string, string | string[]>;

export interface HeaderPolicyOptions {
  /** Claim name → header name. */
  readonly identityHeaders: Readonly<Record<string, string>>;
  readonly forwardAuthorization: boolean;
  readonly trustForwardedHeaders: boolean;
}

export interface HeaderPolicy {
  upstreamRequestHeaders(
    incoming: IncomingHttpHeaders,
    ctx: UpstreamRequestContext,
  ): OutgoingHeaders;
  downstreamResponseHeaders(
    upstream: Readonly<Record<string, string | string[] | undefined>>,
    requestId: string,
  ): OutgoingHeaders;
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
const XFF = 'x-forwarded-for';
const XFP = 'x-forwarded-proto';
const XFH = 'x-forwarded-host';
const FORWARDED_FAMILY = [XFF, XFP, XFH, 'x-forwarded-port', 'x-real-ip', 'forwarded'];
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const HOP_BY_HOP: ReadonlySet<string> = new Set(HOP_BY_HOP_HEADERS);

function normalizeName(name: string): string {
  const lower = name.toLowerCase();
  return lower.includes('_') ? lower.replaceAll('_', '-') : lower;
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

function isStringArray(value: unknown): value is string[] {
  if (!Array.isArray(value)) return false;
  for (const item of value) if (typeof item !== 'string') return false;
  return true;
}

function claimValue(value: unknown): string | undefined {
  let text: string | undefined;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number') text = Number.isFinite(value) ? String(value) : undefined;
  else if (isStringArray(value)) text = value.join(' ');
  return text !== undefined && FIELD_VALUE.test(text) ? text : undefined;
}

function copyWithout(
  source: Readonly<Record<string, string | string[] | undefined>>,
  drop: ReadonlySet<string>,
  guarded: ReadonlySet<string> | null,
): OutgoingHeaders {
  const out: OutgoingHeaders = Object.create(null);
  const nominated = nominatedFields(source.connection);
  for (const name in source) {
    const value = source[name];
    if (value === undefined || drop.has(name)) continue;
    if (guarded !== null && name.includes('_') && guarded.has(name.replaceAll('_', '-'))) continue;
    if (nominated?.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

export function createHeaderPolicy(opts: HeaderPolicyOptions): HeaderPolicy {
  const claims: string[] = [];
  const identityNames: string[] = [];
  for (const [claim, header] of Object.entries(opts.identityHeaders)) {
    claims.push(claim);
    identityNames.push(normalizeName(header));
  }
  const identity: ReadonlySet<string> = new Set(identityNames);
  const trust = opts.trustForwardedHeaders;

  // Removed from every forwarded request; identity headers are set again afterwards.
  const requestDrop = new Set([...HOP_BY_HOP_HEADERS, 'host', 'expect', REQUEST_ID, ...identity]);
  if (!opts.forwardAuthorization) requestDrop.add('authorization');
  if (!trust) for (const name of FORWARDED_FAMILY) requestDrop.add(name);
  // `_` spellings of every field we drop or set are dropped too.
  const guarded: ReadonlySet<string> = new Set([
    ...requestDrop,
    ...FORWARDED_FAMILY,
    'authorization',
  ]);

  return {
    upstreamRequestHeaders(incoming, ctx) {
      const out = copyWithout(incoming, requestDrop, guarded);

      const forwardedFor = out[XFF];
      out[XFF] =
        forwardedFor === undefined
          ? ctx.clientIp
          : `${typeof forwardedFor === 'string' ? forwardedFor : forwardedFor.join(', ')}, ${ctx.clientIp}`;
      if (out[XFP] === undefined) out[XFP] = ctx.proto;
      if (out[XFH] === undefined && ctx.host !== undefined) out[XFH] = ctx.host;
      out[REQUEST_ID] = ctx.requestId;

      const principal = ctx.principal;
      for (let i = 0; i < claims.length; i++) {
        const claim = claims[i] as string;
        const value = claimValue(claim === 'scope' ? principal.scope : principal.claims[claim]);
        if (value !== undefined) out[identityNames[i] as string] = value;
      }
      return out;
    },

    downstreamResponseHeaders(upstream, requestId) {
      const out = copyWithout(upstream, HOP_BY_HOP, null);
      out[REQUEST_ID] = requestId;
      return out;
    },

    isIdentityHeader(name) {
      return identity.has(normalizeName(name));
    },
  };
}
