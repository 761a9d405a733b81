/**
 * The admin revocation API, on the admin listener only (never the public port):
 * `POST /admin/v1/revocations` revokes one token or every token of a client, `GET` (and
 * HEAD) lists the entries not yet expired. Order: off (no admin token: 404) → the admin
 * token, compared in constant time (401 with its own realm) → method (405), so an
 * unauthenticated caller learns nothing but 401.
 *
 * A body is one strict JSON object of at most 16 KiB; a 400 names the field and never
 * echoes a value. An entry is kept while a token it covers can still be accepted: a
 * token's until its `expiresAt` + skew (else now + the longest lifetime + twice the
 * skew: an issuer whose clock runs ahead stamps later), a client's until its cut-off +
 * the longest lifetime + skew; a cut-off may not lie beyond now + skew, its default. A
 * revocation is acknowledged (201) only once the store made it durable, else 503. The
 * audit trail records every stored revocation, every one not stored and every refused
 * admin token, never the token or the body as sent.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CLIENT_ID_RULE, isClientId } from '../domain/clientId.js';
import { isRevocableId, MAX_TOKEN_ID_LENGTH } from '../domain/principal.js';
import { invalidRequest, parseStrictJsonObject } from '../domain/strictJsonObject.js';
import { type FailureReason, PortariaError } from '../errors.js';
import { BodyTooLarge, readBoundedBody } from '../http/readBoundedBody.js';
import { instanceOf, sendJson, sendRefusal } from '../http/replies.js';
import { constantTimeEqual } from '../lib/constantTime.js';
import { isJsonMediaType } from '../lib/mediaType.js';

export const REVOCATIONS_PATH = '/admin/v1/revocations';
export const ADMIN_BODY_LIMIT_BYTES = 16 * 1024;
/** The admin API's challenge on every 401: its own realm, no error code. */
export const ADMIN_CHALLENGE = 'Bearer realm="portaria-admin"';

const ALLOW = 'GET, HEAD, POST';
const NO_STORE = { 'cache-control': 'no-store' } as const;
/** RFC 3339 §5.6 date-time (`T`/`t`, `Z`/`z` or a numeric offset, optional fraction). */
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const FIELDS = new Set(['jti', 'expiresAt', 'clientId', 'issuedBefore']);

/**
 * What the admin API needs of a revocation store: a structural subset of
 * `RevocationStore` (src/revocation/revocationStore.ts).
 */
export interface RevocationAdminStore {
  revokeToken(tokenId: string, expiresAt: number): Promise<void>;
  revokeClient(clientId: string, issuedBefore: number, expiresAt: number): Promise<void>;
  entries(): {
    readonly tokens: readonly { readonly tokenId: string; readonly expiresAt: number }[];
    readonly clients: readonly {
      readonly clientId: string;
      readonly issuedBefore: number;
      readonly expiresAt: number;
    }[];
  };
}

export interface RevocationAdminDeps {
  readonly store: RevocationAdminStore;
  /** The admin API token; null (or empty): the admin API is off. */
  readonly adminToken: string | null;
  /** The longest lifetime of a token the gateway issues or accepts (seconds). */
  readonly maxLifetimeSeconds: number;
  /** The largest clock skew any trusted issuer is allowed (seconds). */
  readonly clockSkewSeconds: number;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  /** Called after a revocation is stored (metrics). */
  readonly onRevoked?: (kind: 'token' | 'client') => void;
  /** The audit trail (see the header); detail values are never secrets. */
  readonly audit?: (
    level: 'info' | 'warn' | 'error',
    event: string,
    detail: Record<string, unknown>,
  ) => void;
}

type Revocation =
  | { readonly kind: 'token'; readonly jti: string; readonly expiresAt: number }
  | {
      readonly kind: 'client';
      readonly clientId: string;
      readonly issuedBefore: number;
      readonly expiresAt: number;
    };

/** Handles a request for `REVOCATIONS_PATH`; refusals become problem details here. */
export async function handleRevocations(
  req: IncomingMessage,
  res: ServerResponse,
  deps: RevocationAdminDeps | undefined,
  problemTypeBase: string,
): Promise<void> {
  const instance = instanceOf(REVOCATIONS_PATH, 'admin');
  try {
    if (deps === undefined || deps.adminToken === null || deps.adminToken === '') {
      throw new PortariaError('not-found', 'The admin API is off (no admin token configured).', {
        reason: 'admin-api-off',
      });
    }
    authenticate(req, deps.adminToken);
    if (req.method === 'GET' || req.method === 'HEAD') {
      return sendJson(res, 200, listing(deps.store), NO_STORE, req.method === 'HEAD');
    }
    if (req.method !== 'POST') {
      throw new PortariaError(
        'method-not-allowed',
        'The revocations endpoint accepts GET, HEAD and POST.',
        {
          reason: 'method',
          headers: { allow: ALLOW },
        },
      );
    }
    if (!isJsonMediaType(req.headers['content-type'])) {
      throw new PortariaError('unsupported-media-type', 'Content-Type must be application/json.', {
        reason: 'content-type',
      });
    }
    const text = await readBoundedBody(req, ADMIN_BODY_LIMIT_BYTES);
    const revocation = parseRevocation(text, deps);
    try {
      await store(revocation, deps);
    } catch (error) {
      deps.audit?.('error', 'revocation not stored', { ...revocation, from: addressOf(req) });
      throw error;
    }
    deps.onRevoked?.(revocation.kind);
    deps.audit?.('info', 'revocation stored', { ...revocation, from: addressOf(req) });
    sendJson(res, 201, JSON.stringify(revocation), NO_STORE);
  } catch (error) {
    if (!(error instanceof PortariaError)) throw error;
    if (error.status === 401) {
      deps?.audit?.('warn', 'admin token refused', { reason: error.reason, from: addressOf(req) });
    }
    sendRefusal(res, error, problemTypeBase, instance, {
      challenge: error.status === 401 ? ADMIN_CHALLENGE : undefined,
      close: error instanceof BodyTooLarge,
    });
  }
}

function addressOf(req: IncomingMessage): string {
  return req.socket.remoteAddress ?? '';
}

/** The admin token of `Authorization: Bearer …`, compared in constant time; else 401. */
export function authenticate(req: IncomingMessage, adminToken: string): void {
  const header = req.headers.authorization;
  if (header === undefined) {
    throw unauthorized('token-missing', 'no-authorization', 'An admin token is required.');
  }
  let count = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if ((req.rawHeaders[i] as string).toLowerCase() === 'authorization') count++;
  }
  const given = /^Bearer +(\S+) *$/i.exec(header)?.[1];
  // Compared even when the header is malformed: every refusal takes the same path.
  const equal = constantTimeEqual(given ?? '', adminToken);
  if (count !== 1 || given === undefined || !equal) {
    throw unauthorized('token-invalid', 'admin-token-invalid', 'The admin token is invalid.');
  }
}

function unauthorized(
  code: 'token-missing' | 'token-invalid',
  reason: FailureReason,
  detail: string,
): PortariaError {
  return new PortariaError(code, detail, { reason });
}

function listing(store: RevocationAdminStore): string {
  const { tokens, clients } = store.entries();
  return JSON.stringify({
    tokens: tokens.map((t) => ({ jti: t.tokenId, expiresAt: t.expiresAt })),
    clients: clients.map((c) => ({
      clientId: c.clientId,
      issuedBefore: c.issuedBefore,
      expiresAt: c.expiresAt,
    })),
  });
}

async function store(revocation: Revocation, deps: RevocationAdminDeps): Promise<void> {
  try {
    if (revocation.kind === 'token') {
      await deps.store.revokeToken(revocation.jti, revocation.expiresAt);
    } else {
      await deps.store.revokeClient(
        revocation.clientId,
        revocation.issuedBefore,
        revocation.expiresAt,
      );
    }
  } catch (cause) {
    throw new PortariaError('service-unavailable', 'The revocation could not be stored.', {
      reason: 'revocation-store-failed',
      cause,
    });
  }
}

/** The body → one validated revocation with its entry expiry (seconds). */
export function parseRevocation(
  text: string,
  deps: Pick<RevocationAdminDeps, 'maxLifetimeSeconds' | 'clockSkewSeconds' | 'now'>,
): Revocation {
  const record = parseStrictJsonObject(text, FIELDS);
  const hasJti = Object.hasOwn(record, 'jti');
  const hasClient = Object.hasOwn(record, 'clientId');
  if (hasJti === hasClient) {
    throw invalidRequest('jti-xor-client', 'Exactly one of jti and clientId is required.');
  }
  const now = Math.floor(deps.now() / 1000);
  const { maxLifetimeSeconds: lifetime, clockSkewSeconds: skew } = deps;

  if (hasJti) {
    if (Object.hasOwn(record, 'issuedBefore')) {
      throw invalidRequest('field-mismatch', 'issuedBefore is allowed with clientId only.');
    }
    const jti = record.jti;
    if (typeof jti !== 'string') throw invalidRequest('wrong-type', 'jti must be a string.');
    if (!isRevocableId(jti, MAX_TOKEN_ID_LENGTH)) {
      throw invalidRequest(
        'bad-jti',
        `jti must be 1 to ${MAX_TOKEN_ID_LENGTH} characters without control characters or lone surrogates.`,
      );
    }
    if (!Object.hasOwn(record, 'expiresAt')) {
      return { kind: 'token', jti, expiresAt: now + skew + lifetime + skew };
    }
    const exp = record.expiresAt;
    if (typeof exp !== 'number' || !Number.isSafeInteger(exp)) {
      throw invalidRequest('wrong-type', 'expiresAt must be an integer (seconds since the epoch).');
    }
    if (exp <= now) throw invalidRequest('expires-in-past', 'expiresAt must be in the future.');
    if (exp > now + skew + lifetime) {
      throw invalidRequest(
        'expires-too-late',
        'expiresAt must not exceed now plus the clock skew and the maximum token lifetime.',
      );
    }
    return { kind: 'token', jti, expiresAt: exp + skew };
  }

  if (Object.hasOwn(record, 'expiresAt')) {
    throw invalidRequest('field-mismatch', 'expiresAt is allowed with jti only.');
  }
  const clientId = record.clientId;
  if (typeof clientId !== 'string')
    throw invalidRequest('wrong-type', 'clientId must be a string.');
  if (!isClientId(clientId)) {
    throw invalidRequest('bad-client-id', `clientId must be ${CLIENT_ID_RULE}.`);
  }
  // Default cut-off: now plus the skew, so that a token issued just before the revocation by
  // a replica or issuer whose clock runs ahead (its iat up to the skew later) is covered.
  const issuedBefore = Object.hasOwn(record, 'issuedBefore')
    ? cutOff(record.issuedBefore)
    : now + skew;
  if (issuedBefore > now + skew)
    throw invalidRequest('cut-off-in-future', 'issuedBefore must not be in the future.');
  return { kind: 'client', clientId, issuedBefore, expiresAt: issuedBefore + lifetime + skew };
}

/** An RFC 3339 date-time or non-negative integer seconds → whole seconds (rounded down). */
function cutOff(value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'string') {
    const m = RFC3339.exec(value);
    const ms = m ? Date.parse(value.toUpperCase()) : Number.NaN;
    // Date.parse rolls 2026-02-30 over; refuse days and times that do not exist.
    if (m && Number.isFinite(ms) && validFields(m)) return Math.floor(ms / 1000);
  }
  throw invalidRequest(
    'bad-issued-before',
    'issuedBefore must be an RFC 3339 date-time or an integer (seconds since the epoch).',
  );
}

function validFields(m: RegExpExecArray): boolean {
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0] = m
    .slice(1, 7)
    .map(Number);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return (
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59
  );
}
