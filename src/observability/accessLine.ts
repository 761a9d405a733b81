/**
 * The access line's fields: OpenTelemetry semantic-convention names (flat dotted keys),
 * ours under `portaria.` where no convention exists. The mapping table and the bounds are
 * in docs/operating.md (Logs).
 *
 * Every variable field is bounded as written (JSON-escaped UTF-8), so a line stays under
 * `ACCESS_LINE_MAX_BYTES` whatever a client sends: a line must fit one atomic write to a
 * pipe (PIPE_BUF, 4096 bytes on Linux). A value cut short is cut at a character boundary
 * and named in `portaria.truncated`. Values are written as JSON strings: quotes, control
 * characters (C0, DEL, C1), U+2028/U+2029 and lone surrogates are escaped, so no value
 * can end its field or its line, or reach a terminal as a control sequence.
 */
import { escapedForReaders, escapeForReaders } from './jsonLineEscapes.js';

/** What a finished request's access line says (the request scope provides it). */
export interface AccessRecord {
  /** Request id: a generated UUID or the caller's plain `X-Request-Id` (≤ 128 characters). */
  readonly id: string;
  readonly method: string;
  /** Route id (config-validated, ≤ 63 characters) or a fixed name. */
  readonly routeId: string;
  /** The request path without the query, as received. */
  readonly urlPath: string;
  readonly status: number;
  readonly durationMs: number;
  readonly peerAddress: string | undefined;
  /** The client behind the trusted proxies (`server.trustedProxies`); the peer otherwise. */
  readonly clientAddress: string | undefined;
  readonly userAgent: string | undefined;
  /** Bytes read from the connection for this request (head and body). */
  readonly requestBytes: number;
  /** Bytes written to the connection for its response (head, body and framing). */
  readonly responseBytes: number;
  /** Time from dispatch to the end of the upstream response (or its failure). */
  readonly upstreamMs: number | undefined;
  readonly clientId: string | undefined;
  /** The client certificate's SHA-256 over its DER, upper-case hex (64 characters), when one came. */
  readonly certificateSha256: string | undefined;
  /** Its verification verdict (closed set: `verified`, `expired`, …), when one came. */
  readonly certificateVerdict: string | undefined;
  /** A private reason code (closed set). */
  readonly reason: string | undefined;
  /** `x-fapi-interaction-id` under profile fapi-br: a UUID, the caller's or generated. */
  readonly interactionId?: string | undefined;
  /** A decision's entry (`nginx`, `traefik`, `envoy`, `envoy-grpc`): the line is a decision's. */
  readonly decision?: string | undefined;
  /** The proxy's second ask about a refused request (nginx's error_page): counted once already. */
  readonly secondAsk?: boolean;
  /** A metered request's quota decision: its policy (a configured name) and outcome (closed set). */
  readonly quota?: {
    readonly policy: { readonly name: string };
    readonly outcome: string;
  } | null;
}

/** The field names, in the order they are written. */
export const ACCESS_FIELDS = {
  requestId: 'portaria.request_id',
  method: 'http.request.method',
  route: 'http.route',
  urlPath: 'url.path',
  status: 'http.response.status_code',
  durationMs: 'portaria.duration_ms',
  peerAddress: 'network.peer.address',
  clientAddress: 'client.address',
  userAgent: 'user_agent.original',
  requestBytes: 'http.request.size',
  responseBytes: 'http.response.size',
  upstreamMs: 'portaria.upstream.duration_ms',
  clientId: 'portaria.client_id',
  certificateSha256: 'tls.client.hash.sha256',
  certificateVerdict: 'portaria.client_certificate.verdict',
  reason: 'portaria.reason',
  interactionId: 'portaria.fapi.interaction_id',
  decision: 'portaria.decision.entry',
  secondAsk: 'portaria.decision.second_ask',
  quotaPolicy: 'portaria.quota.policy',
  quotaOutcome: 'portaria.quota.outcome',
  truncated: 'portaria.truncated',
  exceptionType: 'exception.type',
  exceptionMessage: 'exception.message',
  exceptionStacktrace: 'exception.stacktrace',
} as const;

/** Most bytes a value may take in the line, JSON-escaped, quotes excluded. */
export const ACCESS_BOUNDS = {
  method: 32,
  urlPath: 1024,
  address: 64,
  userAgent: 256,
  clientId: 256,
  exceptionType: 64,
  exceptionMessage: 256,
  exceptionStacktrace: 512,
} as const;

/** Fields bounded where they are made (request id, route id, reason code); cut here too. */
const REQUEST_ID_BYTES = 128;
const ROUTE_BYTES = 64;
const REASON_BYTES = 64;
/** A SHA-256 in hex. */
const HASH_BYTES = 64;
/** A UUID in its RFC 4122 text form. */
const INTERACTION_ID_BYTES = 36;

/** Every access line is shorter than this, newline included (PIPE_BUF on Linux). */
export const ACCESS_LINE_MAX_BYTES = 4096;

/** The path of a raw request target: everything before `?` or `#`. */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return '';
  const q = url.indexOf('?');
  const h = url.indexOf('#');
  const end = q === -1 ? h : h === -1 ? q : Math.min(q, h);
  return end === -1 ? url : url.slice(0, end);
}

/**
 * How many UTF-16 units of `text` fit in `maxBytes` once JSON-escaped and UTF-8 encoded
 * (`text.length` when it all fits); never splits a surrogate pair.
 */
export function fittingLength(text: string, maxBytes: number): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    let size: number;
    let units = 1;
    if (c === 0x22 || c === 0x5c) size = 2;
    else if (c < 0x20) size = c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 2 : 6;
    else if (escapedForReaders(c)) size = 6;
    else if (c < 0x80) size = 1;
    else if (c < 0x800) size = 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        size = 4;
        units = 2;
      } else size = 6;
    } else if (c >= 0xdc00 && c <= 0xdfff) size = 6;
    else size = 3;
    if (bytes + size > maxBytes) return i;
    bytes += size;
    i += units - 1;
  }
  return text.length;
}

/** True when `text` is short printable ASCII without `"` or `\`: written as it is. */
function isPlain(text: string, maxBytes: number): boolean {
  if (text.length > maxBytes) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

/** `text` cut to fit `maxBytes` escaped (itself when it fits). */
export function boundedText(text: string, maxBytes: number): string {
  if (isPlain(text, maxBytes)) return text;
  const n = fittingLength(text, maxBytes);
  return n === text.length ? text : text.slice(0, n);
}

/** The fields cut short in the line being written (reused: the hot path allocates no list). */
const cutNames: string[] = [];
/** False once a value of the line being written needed escaping or is not ASCII. */
let lineAscii = true;

/**
 * One bounded string field, `,"name":` (`member`, made once) then the value as a JSON
 * string, naming the field in `cutNames` when the value was cut short. `JSON.stringify`
 * and `escapeForReaders` escape exactly what `fittingLength` counted.
 */
function stringField(member: string, name: string, text: string, maxBytes: number): string {
  if (isPlain(text, maxBytes)) return `${member}"${text}"`;
  lineAscii = false;
  const n = fittingLength(text, maxBytes);
  if (n === text.length) return member + escapeForReaders(JSON.stringify(text));
  cutNames.push(name);
  return member + escapeForReaders(JSON.stringify(text.slice(0, n)));
}

/** `,"name":` of every field, made once. */
const MEMBER = Object.fromEntries(
  Object.entries(ACCESS_FIELDS).map(([key, name]) => [key, `,"${name}":`]),
) as { readonly [K in keyof typeof ACCESS_FIELDS]: string };

function finite(n: number): number | null {
  return Number.isFinite(n) ? n : null;
}

/** A duration in milliseconds with microsecond precision. */
export function roundedMs(ms: number): number {
  return Math.round(ms * 1e3) / 1e3;
}

/**
 * The record's fields as JSON members, each preceded by a comma (the hot path: the
 * access logger writes the line around it by hand). Absent values are left out.
 */
export function accessFieldsJson(r: AccessRecord): string {
  const f = ACCESS_FIELDS;
  const b = ACCESS_BOUNDS;
  const m = MEMBER;
  cutNames.length = 0;
  lineAscii = true;
  let line =
    stringField(m.requestId, f.requestId, r.id, REQUEST_ID_BYTES) +
    stringField(m.method, f.method, r.method, b.method) +
    stringField(m.route, f.route, r.routeId, ROUTE_BYTES) +
    stringField(m.urlPath, f.urlPath, r.urlPath, b.urlPath) +
    `${m.status}${r.status}${m.durationMs}${finite(r.durationMs)}`;
  if (r.peerAddress !== undefined)
    line += stringField(m.peerAddress, f.peerAddress, r.peerAddress, b.address);
  if (r.clientAddress !== undefined)
    line += stringField(m.clientAddress, f.clientAddress, r.clientAddress, b.address);
  if (r.userAgent !== undefined)
    line += stringField(m.userAgent, f.userAgent, r.userAgent, b.userAgent);
  line += `${m.requestBytes}${r.requestBytes}${m.responseBytes}${r.responseBytes}`;
  if (r.upstreamMs !== undefined) line += `${m.upstreamMs}${finite(roundedMs(r.upstreamMs))}`;
  if (r.clientId !== undefined) line += stringField(m.clientId, f.clientId, r.clientId, b.clientId);
  if (r.certificateSha256 !== undefined) {
    line += stringField(m.certificateSha256, f.certificateSha256, r.certificateSha256, HASH_BYTES);
  }
  if (r.certificateVerdict !== undefined) {
    line += stringField(
      m.certificateVerdict,
      f.certificateVerdict,
      r.certificateVerdict,
      REASON_BYTES,
    );
  }
  if (r.reason !== undefined) line += stringField(m.reason, f.reason, r.reason, REASON_BYTES);
  if (r.interactionId !== undefined) {
    line += stringField(m.interactionId, f.interactionId, r.interactionId, INTERACTION_ID_BYTES);
  }
  // A fixed name (the entries' own): written as it is.
  if (r.decision !== undefined) line += `${m.decision}"${r.decision}"`;
  if (r.secondAsk === true) line += `${m.secondAsk}true`;
  // Both bounded where they are made: a policy name (63 characters of [a-z0-9-]), a fixed outcome.
  const quota = r.quota;
  if (quota != null) {
    line += `${m.quotaPolicy}"${quota.policy.name}"${m.quotaOutcome}"${quota.outcome}"`;
  }
  if (cutNames.length > 0) line += m.truncated + JSON.stringify(cutNames);
  return line;
}

/**
 * True when the line `accessFieldsJson` made last is plain ASCII (no value needed
 * escaping): its bytes are its UTF-16 units, so it can be written as Latin-1 without a
 * UTF-8 encoding pass.
 */
export function lastFieldsAscii(): boolean {
  return lineAscii;
}

/**
 * The record's fields as an object for pino (the upgrade and failed-request lines), the
 * same names and bounds; with `error`, its type, message and stack, bounded
 * (`exception.*`, the OpenTelemetry names).
 */
export function accessFieldsObject(r: AccessRecord, error?: unknown): Record<string, unknown> {
  const f = ACCESS_FIELDS;
  const b = ACCESS_BOUNDS;
  const cut: string[] = [];
  const text = (name: string, value: string, max: number): string => {
    const bounded = boundedText(value, max);
    if (bounded.length !== value.length) cut.push(name);
    return bounded;
  };
  const fields: Record<string, unknown> = {
    [f.requestId]: text(f.requestId, r.id, REQUEST_ID_BYTES),
    [f.method]: text(f.method, r.method, b.method),
    [f.route]: text(f.route, r.routeId, ROUTE_BYTES),
    [f.urlPath]: text(f.urlPath, r.urlPath, b.urlPath),
    [f.status]: r.status,
    [f.durationMs]: finite(r.durationMs),
  };
  if (r.peerAddress !== undefined)
    fields[f.peerAddress] = text(f.peerAddress, r.peerAddress, b.address);
  if (r.clientAddress !== undefined)
    fields[f.clientAddress] = text(f.clientAddress, r.clientAddress, b.address);
  if (r.userAgent !== undefined) fields[f.userAgent] = text(f.userAgent, r.userAgent, b.userAgent);
  fields[f.requestBytes] = r.requestBytes;
  fields[f.responseBytes] = r.responseBytes;
  if (r.upstreamMs !== undefined) fields[f.upstreamMs] = finite(roundedMs(r.upstreamMs));
  if (r.clientId !== undefined) fields[f.clientId] = text(f.clientId, r.clientId, b.clientId);
  if (r.certificateSha256 !== undefined) {
    fields[f.certificateSha256] = text(f.certificateSha256, r.certificateSha256, HASH_BYTES);
  }
  if (r.certificateVerdict !== undefined) {
    fields[f.certificateVerdict] = text(f.certificateVerdict, r.certificateVerdict, REASON_BYTES);
  }
  if (r.reason !== undefined) fields[f.reason] = text(f.reason, r.reason, REASON_BYTES);
  if (r.interactionId !== undefined) {
    fields[f.interactionId] = text(f.interactionId, r.interactionId, INTERACTION_ID_BYTES);
  }
  if (r.decision !== undefined) fields[f.decision] = r.decision;
  if (r.secondAsk === true) fields[f.secondAsk] = true;
  if (r.quota != null) {
    fields[f.quotaPolicy] = r.quota.policy.name;
    fields[f.quotaOutcome] = r.quota.outcome;
  }
  if (error !== undefined) {
    const e = error instanceof Error ? error : undefined;
    fields[f.exceptionType] = text(
      f.exceptionType,
      e?.constructor.name ?? typeof error,
      b.exceptionType,
    );
    fields[f.exceptionMessage] = text(
      f.exceptionMessage,
      e?.message ?? describe(error),
      b.exceptionMessage,
    );
    if (typeof e?.stack === 'string')
      fields[f.exceptionStacktrace] = text(f.exceptionStacktrace, e.stack, b.exceptionStacktrace);
  }
  if (cut.length > 0) fields[f.truncated] = cut;
  return fields;
}

/** A thrown non-Error as text (its own `toString` may throw). */
function describe(value: unknown): string {
  try {
    return String(value);
  } catch {
    return typeof value;
  }
}
