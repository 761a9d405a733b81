/**
 * Reading and rewriting the clients file for the operator CLI.
 *
 * The file is validated with the same rules the gateway applies at start
 * (`buildClientRegistry`) before any change, so the CLI never builds on a broken file
 * and never writes one the gateway would refuse. Writes are atomic: a temporary file in
 * the same directory (mode 0600), fsync, rename over the old file, fsync of the
 * directory. A running gateway reads the file only at start; concurrent CLI runs are
 * not serialised (the last rename wins).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { buildClientRegistry } from './clientRegistry.js';

export interface ClientsFileSecret {
  hash: string;
  expiresAt?: string;
}

export interface ClientsFileEntry {
  id: string;
  secrets: ClientsFileSecret[];
  scopes: string[];
  lifetimeSeconds?: number;
  disabled?: boolean;
}

export interface ClientsFileData {
  clients: ClientsFileEntry[];
}

export interface ClientSummary {
  readonly id: string;
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
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { clients: [] };
    throw err;
  }
  const source = `clients.file (${file})`;
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (err) {
    throw new ClientsFileError(`${file} is not valid JSON (${(err as Error).message})`);
  }
  buildClientRegistry(document, source); // throws ConfigError listing every problem
  return document as ClientsFileData;
}

export async function addClient(file: string, entry: ClientsFileEntry): Promise<void> {
  const data = await readClientsFile(file);
  if (data.clients.some((c) => c.id === entry.id)) {
    throw new ClientsFileError(`client ${JSON.stringify(entry.id)} already exists in ${file}`);
  }
  const next: ClientsFileData = { clients: [...data.clients, entry] };
  buildClientRegistry(next, `clients.file (${file})`);
  await writeClientsFile(file, next);
}

/** Marks a client disabled; returns false when it already was (the file is left untouched). */
export async function disableClient(file: string, id: string): Promise<boolean> {
  const data = await readClientsFile(file);
  const entry = data.clients.find((c) => c.id === id);
  if (entry === undefined) {
    throw new ClientsFileError(`no client ${JSON.stringify(id)} in ${file}`);
  }
  if (entry.disabled === true) return false;
  entry.disabled = true;
  await writeClientsFile(file, data);
  return true;
}

/** What `clients list` shows: never a hash. */
export async function listClients(file: string): Promise<ClientSummary[]> {
  const data = await readClientsFile(file);
  return data.clients.map((c) => ({
    id: c.id,
    scopes: c.scopes,
    lifetimeSeconds: c.lifetimeSeconds ?? null,
    disabled: c.disabled === true,
    secretCount: c.secrets.length,
  }));
}

/** Atomic replace: temp file (0600) in the same directory, fsync, rename, fsync the directory. */
export async function writeClientsFile(file: string, data: ClientsFileData): Promise<void> {
  const dir = dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(data, null, 2)}\n`, 'utf8');
    await handle.sync();
  } catch (err) {
    await handle.close();
    await rm(temp, { force: true });
    throw err;
  }
  await handle.close();
  try {
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  await syncDirectory(dir);
}

async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic.
  }
}
