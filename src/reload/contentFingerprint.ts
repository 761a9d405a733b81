/**
 * A digest of what a reloadable source's files contain, so a reload runs only when the
 * contents changed (not on every `touch`, editor save of the same bytes, or unrelated
 * event in a watched directory).
 *
 * - A file: SHA-256 of its bytes, read through symlinks (a Kubernetes mount's
 *   `clients.json -> ..data/clients.json`).
 * - A directory: SHA-256 over the sorted (name, SHA-256 of bytes) of its regular files,
 *   following symlinks; dotfiles (`..data`, `..2026_01_…`, editor swap files) and
 *   `*.tmp` files (our own atomic writes in progress) are ignored, as the loaders ignore
 *   them, and so is every name the caller's `include` refuses (the keys directory counts
 *   key files and schedule.json only: the chart mounts clients.json beside them).
 * - A path that is missing or unreadable contributes its error code, so its appearance
 *   or disappearance is a change too. `missing` tells the caller that some path (or a
 *   file listed in a directory) was absent: a rename-over may be in progress.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';

export interface ContentFingerprint {
  readonly digest: string;
  /** Some path, or a file listed in a watched directory, did not exist (ENOENT). */
  readonly missing: boolean;
}

/** Which names of a watched directory count (besides dotfiles and `*.tmp`, never counted). */
export type EntryFilter = (name: string) => boolean;

const EVERY_ENTRY: EntryFilter = () => true;

export async function contentFingerprint(
  paths: readonly string[],
  include: EntryFilter = EVERY_ENTRY,
): Promise<ContentFingerprint> {
  const outer = createHash('sha256');
  const state = { missing: false, include };
  for (const path of paths) {
    outer.update(`${path}\0${await pathDigest(path, state)}\n`);
  }
  return { digest: outer.digest('hex'), missing: state.missing };
}

interface DigestState {
  missing: boolean;
  readonly include: EntryFilter;
}

async function pathDigest(path: string, state: DigestState): Promise<string> {
  try {
    const info = await stat(path);
    if (info.isDirectory()) return `dir:${await directoryDigest(path, state)}`;
    if (info.isFile()) return `file:${sha256(await readFile(path))}`;
    return 'other';
  } catch (err) {
    return `error:${errorCode(err, state)}`;
  }
}

async function directoryDigest(dir: string, state: DigestState): Promise<string> {
  const names = (await readdir(dir))
    .filter((name) => !name.startsWith('.') && !name.endsWith('.tmp') && state.include(name))
    .sort();
  const hash = createHash('sha256');
  for (const name of names) {
    let part: string;
    try {
      const path = join(dir, name);
      if (!(await stat(path)).isFile()) continue;
      part = sha256(await readFile(path));
    } catch (err) {
      part = `error:${errorCode(err, state)}`;
    }
    hash.update(`${name}\0${part}\n`);
  }
  return hash.digest('hex');
}

function errorCode(err: unknown, state: DigestState): string {
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  if (code === 'ENOENT') state.missing = true;
  return code;
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
