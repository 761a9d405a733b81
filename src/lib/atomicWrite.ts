/**
 * Crash-safe file writes (keys, key schedule, clients file): the data goes to a hidden temporary file
 * (mode 0600, fsynced), which then takes the final name in one step, and the directory
 * is fsynced so the new name survives a power cut. A reader sees the old file or the
 * new one, never a half-written one (loaders and the reload watcher ignore dotfiles and `*.tmp`).
 *
 * - `writeNewFile` links the temporary into place: it fails with EEXIST instead of
 *   replacing a file (a key file is never overwritten).
 * - `replaceFile` renames it into place: it replaces the file atomically (the schedule, the
 *   clients file), keeping the replaced file's owner and its user and group permissions
 *   (never those for others) — an operator who made the clients file group-readable for
 *   the gateway keeps it so after a `clients add`.
 * Both take an optional `like`: a file whose owner and permissions a file that did not
 * exist before takes (a new key file takes those of the keys already in the directory,
 * which the gateway can read), instead of this user's and 0600.
 */
import { randomBytes } from 'node:crypto';
import { chmod, chown, link, mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

export async function writeNewFile(
  dir: string,
  name: string,
  data: string,
  like?: string,
): Promise<string> {
  return write(dir, name, data, async (temp, path) => {
    if (like !== undefined) await keepModeAndOwner([like], temp);
    await link(temp, path);
  });
}

export async function replaceFile(
  dir: string,
  name: string,
  data: string,
  like?: string,
): Promise<string> {
  return write(dir, name, data, async (temp, path) => {
    await keepModeAndOwner(like === undefined ? [path] : [path, like], temp);
    await rename(temp, path);
  });
}

/**
 * Gives `temp` the owner and the user and group permissions of the first of `models` that
 * exists (owner: where permitted). Permissions for others are never kept: these files
 * hold secret hashes and key schedules, and a file first made with a loose umask must not
 * stay world-readable once it holds them.
 */
async function keepModeAndOwner(models: readonly string[], temp: string): Promise<void> {
  let current: { mode: number; uid: number; gid: number } | undefined;
  for (const model of models) {
    try {
      current = await stat(model);
      break;
    } catch {
      // next model
    }
  }
  if (current === undefined) return; // a first write: the 0600 default
  await chmod(temp, current.mode & 0o770);
  try {
    await chown(temp, current.uid, current.gid);
  } catch {
    // Only root may give a file away; a member of the file's group may still give the new
    // file that group (the one a gateway reading through its group needs).
    try {
      await chown(temp, -1, current.gid);
    } catch {
      // Not a member either: the new file keeps this user's group.
    }
  }
}

async function write(
  dir: string,
  name: string,
  data: string,
  place: (temp: string, path: string) => Promise<void>,
): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, name);
  const temp = join(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', 0o600);
  try {
    try {
      await handle.writeFile(data, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await place(temp, path);
  } finally {
    // After link() the temporary is a second name to drop; after rename() it is gone.
    await rm(temp, { force: true });
  }
  await syncDirectory(dir);
  return path;
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
    // Some platforms cannot fsync a directory; the link or rename is still atomic.
  }
}
