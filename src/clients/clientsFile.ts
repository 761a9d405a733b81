/**
 * Reading and rewriting the clients file for the operator CLI.
 *
 * The file is validated with the same rules the gateway applies at start
 * (`buildClientRegistry`) before any change, so the CLI never builds on a broken file
 * and never writes one the gateway would refuse. Writes are atomic: a temporary file in
 * the same directory (mode 0600), fsync, rename over the old file, fsync of the
 * directory, so a gateway that reloads the file on change never reads half of it.
 * Each change holds the file's lock (`withEditLock`) from the read to the rename, so two
 * CLI runs at the same moment both land, one after the other.
 *
 * Secret rotation: a client holds at most two secrets. `rotateClientSecret` adds a new
 * one and gives the previous ones an expiry (now + overlap, or their own if earlier);
 * expired secrets are dropped first, and a rotation that would leave three secrets is
 * refused, never resolved by silently dropping a secret that still works.
 */
import { mkdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { replaceFile } from '../lib/atomicWrite.js';
import { withEditLock } from '../lib/editLock.js';
import { jsonErrorWhere } from '../lib/jsonError.js';
import { buildClientRegistry, MAX_SECRETS_PER_CLIENT } from './clientRegistry.js';
import { escapedId, lookalikesOf } from './lookalikeIds.js';
import { SECRET_METHODS } from './oauthClientFields.js';

export interface ClientsFileSecret {
  hash: string;
  expiresAt?: string;
}

export interface ClientsFileEntry extends ClientAuthFields {
  id: string;
  secrets: ClientsFileSecret[];
  scopes: string[];
  lifetimeSeconds?: number;
  disabled?: boolean;
  requireCertificate?: boolean;
  requireCertificateBound?: boolean;
  requireSenderConstrained?: boolean;
  /** A `quotas.policies` name: the client's own quota policy. */
  quota?: string;
}

/** A client's OAuth 2.0 fields as the file holds them (`oauthClientFields.ts`). */
export interface ClientAuthFields {
  authMethods?: string[];
  jwksFile?: string;
  jwksUri?: string;
  assertionAlg?: string;
  audiences?: string[];
  permissions?: string[];
  /** `tls_client_auth`'s one identity: `{ subjectDn }`, `{ sanDns }`, … (`tlsClientIdentity.ts`). */
  tlsClientAuth?: Record<string, string>;
}

export interface ClientsFileData {
  clients: ClientsFileEntry[];
}

export interface ClientSummary {
  readonly id: string;
  /** How it authenticates at the OAuth endpoints (the default for a client with secrets). */
  readonly authMethods: readonly string[];
  readonly scopes: readonly string[];
  readonly lifetimeSeconds: number | null;
  readonly disabled: boolean;
  readonly secretCount: number;
}

/** A refused CLI operation (duplicate id, unknown id); the message is shown as is. */
export class ClientsFileError extends Error {
  override readonly name = 'ClientsFileError';
}

/** The validated raw document; `{ clients: [] }` when the file does not exist yet. */
export async function readClientsFile(file: string): Promise<ClientsFileData> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { clients: [] };
    throw new ClientsFileError(`${file}: cannot read (${code ?? 'error'})`);
  }
  const source = `clients.file (${file})`;
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (err) {
    throw new ClientsFileError(`${file}: ${jsonErrorWhere(err)}`);
  }
  buildClientRegistry(document, source); // throws ConfigError listing every problem
  return document as ClientsFileData;
}

/**
 * Adds a client. Returns an existing id that differs from the new one only in Unicode
 * spelling (equal under NFKC), for the CLI to point out: ids are never normalised, so
 * both are registered, as two clients.
 */
export async function addClient(
  file: string,
  entry: ClientsFileEntry,
): Promise<string | undefined> {
  // The first client makes the directory (as the atomic write would), before the lock.
  try {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new ClientsFileError(`${file}: cannot create its directory (${code})`);
  }
  return withEditLock(file, async () => {
    const data = await readClientsFile(file);
    if (data.clients.some((c) => c.id === entry.id)) {
      throw new ClientsFileError(`client ${JSON.stringify(entry.id)} already exists in ${file}`);
    }
    const next: ClientsFileData = { clients: [...data.clients, entry] };
    buildClientRegistry(next, `clients.file (${file})`);
    await writeClientsFile(file, next);
    return lookalikesOf(
      data.clients.map((c) => c.id),
      entry.id,
    )[0];
  });
}

/** Marks a client disabled; returns false when it already was (the file is left untouched). */
export async function disableClient(file: string, id: string): Promise<boolean> {
  return withEditLock(file, async () => {
    const data = await readClientsFile(file);
    const entry = data.clients.find((c) => c.id === id);
    if (entry === undefined) {
      throw noClient(file, id, data);
    }
    if (entry.disabled === true) return false;
    entry.disabled = true;
    await writeClientsFile(file, data);
    return true;
  });
}

/** Clears a client's disabled flag; false when it was not disabled. */
export async function enableClient(file: string, id: string): Promise<boolean> {
  return withEditLock(file, async () => {
    const data = await readClientsFile(file);
    const entry = data.clients.find((c) => c.id === id);
    if (entry === undefined) throw noClient(file, id, data);
    if (entry.disabled !== true) return false;
    delete entry.disabled;
    await writeClientsFile(file, data);
    return true;
  });
}

/** Deletes a client from the file. */
export async function removeClient(file: string, id: string): Promise<void> {
  await withEditLock(file, async () => {
    const data = await readClientsFile(file);
    const next: ClientsFileData = { clients: data.clients.filter((c) => c.id !== id) };
    if (next.clients.length === data.clients.length) {
      throw noClient(file, id, data);
    }
    buildClientRegistry(next, `clients.file (${file})`);
    await writeClientsFile(file, next);
  });
}

export interface SetAuthResult {
  readonly entry: ClientsFileEntry;
  /** Secrets removed because the client no longer allows a secret method. */
  readonly droppedSecrets: number;
}

/**
 * Replaces a client's OAuth 2.0 fields with those given (`undefined`: kept; `null`:
 * removed), validated with the gateway's rules before the file is written. A client
 * moved to methods without a secret one loses its secrets unless `keepSecrets`: an
 * operator moving a client whose secret leaked to its keys must not stay exposed.
 */
export function setClientAuth(
  file: string,
  id: string,
  change: { readonly [K in keyof ClientAuthFields]?: ClientAuthFields[K] | null },
  options: { readonly keepSecrets?: boolean } = {},
): Promise<SetAuthResult> {
  return withEditLock(file, async () => {
    const data = await readClientsFile(file);
    const entry = data.clients.find((c) => c.id === id);
    if (entry === undefined) throw noClient(file, id, data);
    for (const [key, value] of Object.entries(change) as [keyof ClientAuthFields, unknown][]) {
      if (value === undefined) continue;
      if (value === null) delete entry[key];
      else (entry as unknown as Record<string, unknown>)[key] = value;
    }
    // A new key source replaces the other one.
    if (change.jwksFile) delete entry.jwksUri;
    if (change.jwksUri) delete entry.jwksFile;
    // An identity is only for tls_client_auth: methods without it drop it.
    if (change.authMethods && !change.authMethods.includes('tls_client_auth')) {
      delete entry.tlsClientAuth;
    }
    const secretMethod = (entry.authMethods ?? SECRET_METHODS).some((m) =>
      (SECRET_METHODS as readonly string[]).includes(m),
    );
    const droppedSecrets = secretMethod || options.keepSecrets ? 0 : entry.secrets.length;
    if (droppedSecrets > 0) entry.secrets = [];
    buildClientRegistry(data, `clients.file (${file})`);
    await writeClientsFile(file, data);
    return { entry, droppedSecrets };
  });
}

export interface SecretRotation {
  /** Stored hash of the new secret (no expiry). */
  readonly hash: string;
  /** Moment of the rotation, ms since the epoch. */
  readonly nowMs: number;
  /** How long the previous secrets stay valid; 0 removes them. */
  readonly overlapMs: number;
}

export interface RotationResult {
  /** Expiry (RFC 3339) of each previous secret kept beside the new one, in file order. */
  readonly kept: readonly string[];
  /** Previous secrets removed: already expired, or ending now (overlap 0). */
  readonly dropped: number;
}

/**
 * Adds a new secret to a client and makes its previous secrets expire at
 * now + overlap (an earlier expiry already set is kept). A secret whose expiry is at or
 * before now no longer matches (as in the authenticator) and is dropped. Refused when
 * the client would end up with more than two secrets.
 */
export function rotateClientSecret(
  file: string,
  id: string,
  rotation: SecretRotation,
): Promise<RotationResult> {
  return withEditLock(file, () => rotateLocked(file, id, rotation));
}

async function rotateLocked(
  file: string,
  id: string,
  rotation: SecretRotation,
): Promise<RotationResult> {
  const data = await readClientsFile(file);
  const entry = data.clients.find((c) => c.id === id);
  if (entry === undefined) {
    throw noClient(file, id, data);
  }
  const { nowMs, overlapMs } = rotation;
  const endMs = nowMs + overlapMs;
  // With no overlap, every previous secret ends now and is dropped with the expired ones.
  const kept =
    overlapMs > 0
      ? entry.secrets.filter((s) => (expiryMs(s) ?? Number.POSITIVE_INFINITY) > nowMs)
      : [];
  if (kept.length >= MAX_SECRETS_PER_CLIENT) {
    const expiries = kept.map(expiryMs).filter((ms): ms is number => ms !== null);
    throw new ClientsFileError(
      expiries.length === 0
        ? `${id} already has two valid secrets and neither expires; pass --overlap 0 to replace both`
        : `${id} already has two valid secrets; the older expires at ${timestamp(Math.min(...expiries))}; try again after it or pass --overlap 0`,
    );
  }
  const previous = kept.map((s) => ({
    hash: s.hash,
    expiresAt: timestamp(Math.min(expiryMs(s) ?? endMs, endMs)),
  }));
  const dropped = entry.secrets.length - kept.length;
  entry.secrets = [...previous, { hash: rotation.hash }];
  buildClientRegistry(data, `clients.file (${file})`);
  await writeClientsFile(file, data);
  return { kept: previous.map((s) => s.expiresAt), dropped };
}

/** "No such client", naming a client whose id differs only in Unicode spelling. */
function noClient(file: string, id: string, data: ClientsFileData): ClientsFileError {
  const [lookalike] = lookalikesOf(
    data.clients.map((c) => c.id),
    id,
  );
  const hint =
    lookalike === undefined
      ? ''
      : ` (${escapedId(lookalike)} differs from ${escapedId(id)} only in Unicode spelling; ids are compared byte for byte)`;
  return new ClientsFileError(`no client ${JSON.stringify(id)} in ${file}${hint}`);
}

/** A stored secret's expiry, ms since the epoch; null when it has none (the file is validated). */
function expiryMs(secret: ClientsFileSecret): number | null {
  return secret.expiresAt === undefined ? null : Date.parse(secret.expiresAt);
}

/** RFC 3339 in UTC, without milliseconds when they are zero (`2026-01-02T00:00:00Z`). */
function timestamp(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

/** What `clients list` shows: never a hash. */
/** The clients of an existing file (a missing one is an error: a mistyped path is not an empty registry). */
export async function listClients(file: string): Promise<ClientSummary[]> {
  try {
    await stat(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new ClientsFileError(
      code === 'ENOENT'
        ? `${file} does not exist (create it with "portaria clients add <id> --scopes …")`
        : `${file}: cannot read (${code})`,
    );
  }
  const data = await readClientsFile(file);
  const registry = buildClientRegistry(data, `clients.file (${file})`);
  return data.clients.map((c) => ({
    id: c.id,
    authMethods: registry.get(c.id)?.authMethods ?? [],
    scopes: c.scopes,
    lifetimeSeconds: c.lifetimeSeconds ?? null,
    disabled: c.disabled === true,
    secretCount: c.secrets.length,
  }));
}

/** Atomic replace: temp file (0600) in the same directory, fsync, rename, fsync the directory. */
export async function writeClientsFile(file: string, data: ClientsFileData): Promise<void> {
  await replaceFile(dirname(file), basename(file), `${JSON.stringify(data, null, 2)}\n`);
}
