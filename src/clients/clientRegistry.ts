/**
 * The client registry: who may ask for tokens, with which secrets and scopes.
 *
 * Loaded once at start from the clients file (JSON, written by `portaria clients …`):
 *
 *   { "clients": [ { "id": "acme",
 *                    "secrets": [ { "hash": "sha256:…", "expiresAt": "2026-12-01T00:00:00Z" } ],
 *                    "scopes": ["orders:read"], "lifetimeSeconds": 900, "disabled": false } ] }
 *
 * Everything is validated before anything is used; every problem is reported at once
 * with its path (`clients[2].scopes: …`). The result is immutable; lookups go through a
 * `Map`, so ids such as `__proto__` or `constructor` are plain keys, compared byte for
 * byte (ids follow `domain/clientId.ts`: any Unicode text, never normalised).
 *
 * The rules for scopes and lifetimes are exported for the CLI, which must refuse exactly
 * what this loader refuses (as must it for ids, with the same `clientIdProblem`).
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from '../config/configError.js';
import { clientIdProblem } from '../domain/clientId.js';
import { isScopeToken } from '../domain/scope.js';
import { jsonErrorWhere } from '../lib/jsonError.js';
import {
  AUTH_METHODS,
  OAUTH_FIELDS,
  type OAuthClientFields,
  oauthClientFields,
  SECRET_METHODS,
} from './oauthClientFields.js';
import { type ParsedHash, parseSecretHash } from './secretHash.js';

export interface ClientSecret {
  readonly hash: ParsedHash;
  /** Moment from which this secret no longer matches; null = never expires. */
  readonly expiresAtMs: number | null;
}

/** A client; its OAuth 2.0 fields are described in `oauthClientFields.ts`. */
export interface ClientRecord extends OAuthClientFields {
  readonly id: string;
  readonly secrets: readonly ClientSecret[];
  readonly scopes: readonly string[];
  /** Space-joined scopes, as the token's `scope` claim carries them (RFC 6749 §3.3). */
  readonly scope: string;
  /** Token lifetime override; null = the configured default. */
  readonly lifetimeSeconds: number | null;
  readonly disabled: boolean;
  /** Its tokens only to a request with a verified client certificate (RFC 8705 §3). */
  readonly requireCertificate: boolean;
  /** Only certificate-bound tokens of it pass at the edge; implies `requireCertificate`. */
  readonly requireCertificateBound: boolean;
  /**
   * Its tokens are sender-constrained: issued only with a DPoP proof (RFC 9449) or bound to
   * its certificate (RFC 8705), and only such tokens of it pass at the edge.
   */
  readonly requireSenderConstrained: boolean;
  /** Its own quota policy (`quotas.policies`), over the route's; null: the route's. */
  readonly quota: string | null;
}

export const MAX_SECRETS_PER_CLIENT = 2;
export const MAX_LIFETIME_SECONDS = 86_400;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const CLIENT_FIELDS = new Set<string>([
  'id',
  'secrets',
  'scopes',
  'lifetimeSeconds',
  'disabled',
  'requireCertificate',
  'requireCertificateBound',
  'requireSenderConstrained',
  'quota',
  ...OAUTH_FIELDS,
]);
const SECRET_FIELDS = new Set(['hash', 'expiresAt']);
/** A quota policy's name, as `quotas.policies` spells them (config/schema.ts). */
const QUOTA_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Problems with a scope list, each prefixed with `path`; empty when the list is valid. */
/**
 * The most characters a client's scopes may take, space-separated. They travel in every
 * token the client gets (and to the upstream in `X-Token-Scope`): 4096 keeps an ES256,
 * EdDSA or RS256 token near 6 KiB, well inside `server.maxHeaderBytes` (16 KiB by
 * default), so the gateway never issues a token its own listener would refuse (431).
 */
export const MAX_SCOPE_TEXT = 4096;

export function scopesProblems(value: unknown, path: string): string[] {
  if (!Array.isArray(value) || !value.every((s) => typeof s === 'string')) {
    return [`${path}: must be an array of scope tokens`];
  }
  if (value.length === 0) return [`${path}: must list at least one scope`];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const scope of value as string[]) {
    if (!isScopeToken(scope)) {
      problems.push(
        `${path}: ${JSON.stringify(scope)} is not a scope token (RFC 6749 §3.3: printable ASCII without space, " or \\)`,
      );
    } else if (seen.has(scope)) {
      problems.push(`${path}: duplicate scope ${JSON.stringify(scope)}`);
    }
    seen.add(scope);
  }
  const length = (value as string[]).join(' ').length;
  if (length > MAX_SCOPE_TEXT) {
    problems.push(
      `${path}: the scopes take ${length} characters space-separated, more than ${MAX_SCOPE_TEXT}: every token carries them, and its Authorization header must fit server.maxHeaderBytes`,
    );
  }
  return problems;
}

/** Why `value` is not a token lifetime (integer seconds, 1 to 86400), or null. */
export function lifetimeProblem(value: unknown): string | null {
  if (
    Number.isInteger(value) &&
    (value as number) >= 1 &&
    (value as number) <= MAX_LIFETIME_SECONDS
  ) {
    return null;
  }
  return `must be an integer number of seconds from 1 to ${MAX_LIFETIME_SECONDS}`;
}

export class ClientRegistry {
  readonly #clients: ReadonlyMap<string, ClientRecord>;
  readonly #ids: readonly string[];
  /** True when any client has a scrypt hash (the authenticator then adds scrypt work to every call). */
  readonly usesScrypt: boolean;

  constructor(records: readonly ClientRecord[]) {
    const map = new Map<string, ClientRecord>();
    for (const record of records) {
      if (map.has(record.id)) throw new Error(`duplicate client id ${JSON.stringify(record.id)}`);
      map.set(record.id, record);
    }
    this.#clients = map;
    this.#ids = Object.freeze([...map.keys()]);
    this.usesScrypt = records.some((c) => c.secrets.some((s) => s.hash.scheme === 'scrypt'));
    Object.freeze(this);
  }

  get(id: string): ClientRecord | undefined {
    return this.#clients.get(id);
  }

  get size(): number {
    return this.#clients.size;
  }

  /** Client ids in file order. */
  ids(): readonly string[] {
    return this.#ids;
  }
}

/** Reads and validates the clients file; throws `ConfigError` listing every problem. */
export async function loadClientRegistry(file: string): Promise<ClientRegistry> {
  const source = `clients.file (${file})`;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new ConfigError(
        [
          `clients.file: ${file} does not exist (create it with "portaria clients add <id> --scopes …")`,
        ],
        source,
      );
    }
    throw new ConfigError([`clients.file: ${file}: cannot read (${code ?? 'error'})`], source);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`clients.file: ${jsonErrorWhere(err)}`], source);
  }
  return buildClientRegistry(document, source);
}

/** Validates a parsed clients document; throws `ConfigError` (with `source`) listing every problem. */
export function buildClientRegistry(document: unknown, source: string): ClientRegistry {
  const problems: string[] = [];
  const records: ClientRecord[] = [];
  if (!isPlainObject(document)) {
    throw new ConfigError(['clients.file: must be a JSON object with a "clients" array'], source);
  }
  for (const key of Object.keys(document)) {
    if (key !== 'clients') problems.push(`${key}: unknown field`);
  }
  const list = document.clients;
  if (!Array.isArray(list)) {
    problems.push('clients: must be an array');
    throw new ConfigError(problems, source);
  }
  const firstIndex = new Map<string, number>();
  list.forEach((entry: unknown, index: number) => {
    const { id, record } = validateClient(entry, `clients[${index}]`, problems);
    if (id === null) return;
    const first = firstIndex.get(id);
    if (first !== undefined) {
      problems.push(
        `clients[${index}].id: duplicate id ${JSON.stringify(id)} (also clients[${first}])`,
      );
      return;
    }
    firstIndex.set(id, index);
    if (record !== null) records.push(record);
  });
  if (problems.length > 0) throw new ConfigError(problems, source);
  return new ClientRegistry(records);
}

/**
 * Pushes the entry's problems. Returns its id when the id itself is valid (so duplicates
 * are still found in an otherwise broken file) and the record when the whole entry is.
 */
function validateClient(
  entry: unknown,
  path: string,
  problems: string[],
): { id: string | null; record: ClientRecord | null } {
  if (!isPlainObject(entry)) {
    problems.push(`${path}: must be an object`);
    return { id: null, record: null };
  }
  const before = problems.length;
  for (const key of Object.keys(entry)) {
    if (!CLIENT_FIELDS.has(key)) problems.push(`${path}.${key}: unknown field`);
  }
  const idProblem = clientIdProblem(entry.id);
  if (idProblem) problems.push(`${path}.id: ${idProblem}`);
  problems.push(...scopesProblems(entry.scopes, `${path}.scopes`));
  if (entry.lifetimeSeconds !== undefined) {
    const p = lifetimeProblem(entry.lifetimeSeconds);
    if (p) problems.push(`${path}.lifetimeSeconds: ${p}`);
  }
  for (const flag of [
    'disabled',
    'requireCertificate',
    'requireCertificateBound',
    'requireSenderConstrained',
  ] as const) {
    if (entry[flag] !== undefined && typeof entry[flag] !== 'boolean') {
      problems.push(`${path}.${flag}: must be true or false`);
    }
  }
  if (entry.quota !== undefined && entry.quota !== null) {
    if (typeof entry.quota !== 'string' || !QUOTA_NAME.test(entry.quota)) {
      problems.push(`${path}.quota: a quotas.policies name (lowercase letters, digits and -)`);
    }
  }
  const keysOnly = isKeysOnly(entry.authMethods);
  const secrets = validateSecrets(entry.secrets, `${path}.secrets`, keysOnly, problems);
  const hasSecrets = !Array.isArray(entry.secrets) || entry.secrets.length > 0;
  const oauth = oauthClientFields(entry, path, hasSecrets, problems);
  const id = idProblem === null ? (entry.id as string) : null;
  if (problems.length > before || secrets === null || id === null || oauth === null) {
    return { id, record: null };
  }
  const scopes = Object.freeze([...(entry.scopes as string[])]);
  const record: ClientRecord = Object.freeze({
    id,
    secrets,
    scopes,
    scope: scopes.join(' '),
    lifetimeSeconds: (entry.lifetimeSeconds as number | undefined) ?? null,
    disabled: entry.disabled === true,
    requireCertificate: entry.requireCertificate === true || entry.requireCertificateBound === true,
    requireCertificateBound: entry.requireCertificateBound === true,
    requireSenderConstrained: entry.requireSenderConstrained === true,
    quota: typeof entry.quota === 'string' ? entry.quota : null,
    ...oauth,
  });
  return { id, record };
}

/**
 * A client authenticating with its keys or its certificate only (`private_key_jwt`, RFC
 * 8705's tls methods), no secret method listed, may have no secret.
 */
function isKeysOnly(methods: unknown): boolean {
  return (
    Array.isArray(methods) &&
    methods.length > 0 &&
    methods.every((m) => AUTH_METHODS.includes(m) && !SECRET_METHODS.includes(m))
  );
}

function validateSecrets(
  value: unknown,
  path: string,
  keysOnly: boolean,
  problems: string[],
): readonly ClientSecret[] | null {
  if (!Array.isArray(value)) {
    problems.push(`${path}: must be an array of secrets`);
    return null;
  }
  if ((value.length < 1 && !keysOnly) || value.length > MAX_SECRETS_PER_CLIENT) {
    problems.push(`${path}: must hold 1 or ${MAX_SECRETS_PER_CLIENT} secrets`);
  }
  const out: ClientSecret[] = [];
  value.forEach((secret: unknown, index: number) => {
    const at = `${path}[${index}]`;
    if (!isPlainObject(secret)) {
      problems.push(`${at}: must be an object with a "hash"`);
      return;
    }
    for (const key of Object.keys(secret)) {
      if (!SECRET_FIELDS.has(key)) problems.push(`${at}.${key}: unknown field`);
    }
    const hash = typeof secret.hash === 'string' ? parseSecretHash(secret.hash) : null;
    if (hash === null) {
      problems.push(`${at}.hash: must be "sha256:<base64url>" or "scrypt:N:r:p:<salt>:<hash>"`);
    }
    let expiresAtMs: number | null = null;
    if (secret.expiresAt !== undefined) {
      expiresAtMs = parseTimestamp(secret.expiresAt);
      if (expiresAtMs === null) {
        problems.push(`${at}.expiresAt: must be an RFC 3339 date-time (2026-12-01T00:00:00Z)`);
      }
    }
    if (hash !== null) out.push(Object.freeze({ hash, expiresAtMs }));
  });
  return Object.freeze(out);
}

/** RFC 3339 date-time with an explicit offset; rejects impossible dates that `Date.parse` rolls over. */
function parseTimestamp(value: unknown): number | null {
  if (typeof value !== 'string') return null;
  const m = RFC3339.exec(value);
  if (!m) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const calendar = new Date(Date.UTC(year, month - 1, day));
  if (
    calendar.getUTCFullYear() !== year ||
    calendar.getUTCMonth() + 1 !== month ||
    calendar.getUTCDate() !== day ||
    Number(m[4]) > 23 ||
    Number(m[5]) > 59 ||
    Number(m[6]) > 59
  ) {
    return null;
  }
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
