/**
 * An exclusive lock around a read-modify-write of one file (the clients file, a keys
 * directory's schedule), so that two operator commands run at the same moment cannot
 * both read the old file and have the second rename silently drop the first's change.
 *
 * The lock is a file beside the target, `.<name>.lock` (a dotfile: loaders and the
 * reload watcher ignore it), created with O_EXCL and holding the owner's pid, host and
 * start time. Another run waits for it (polling) up to `timeoutMs`, then fails naming
 * the holder. A lock left by a process that died (same host, pid no longer running) is
 * taken over, and so is one whose owner was never written (its creator died in between)
 * once it is older than any command takes; a lock from another host is only waited for.
 *
 * Advisory: it serialises Portaria's own commands, not an editor writing the file.
 * The pieces below the lock itself (creating, reading, describing a lock file) are shared
 * with `heldFileLock`, the lock a running gateway holds on its revocation files.
 */
import { type FileHandle, open, readFile, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';

export interface FileLockOptions {
  /** How long to wait for another holder (default 10 s). */
  readonly timeoutMs?: number;
  /** Pause between attempts (default 25 ms). */
  readonly pollMs?: number;
}

/** The lock could not be taken in time; the message names the holder. */
export class FileLockTimeout extends Error {
  override readonly name = 'FileLockTimeout';
}

/** What a lock file holds. */
export interface LockOwner {
  readonly pid: number;
  readonly host: string;
  /** When the lock was taken (ISO 8601). */
  readonly since: string;
  /** Linux, held locks only: the boot id, the pid namespace and the holder's start tick. */
  readonly boot?: string;
  readonly pidns?: string;
  readonly start?: string;
}

export function lockPathFor(file: string): string {
  return join(dirname(file), `.${basename(file)}.lock`);
}

/**
 * Runs `work` while holding the lock of `file`; the lock is released however it ends.
 * When the file's directory does not exist there is nothing to change or to lock:
 * `work` runs at once and reports the missing file its own way (a caller that creates
 * the directory does so before taking the lock).
 */
export async function withFileLock<T>(
  file: string,
  work: () => Promise<T>,
  options: FileLockOptions = {},
): Promise<T> {
  const lockPath = lockPathFor(file);
  if (!(await acquire(lockPath, options.timeoutMs ?? 10_000, options.pollMs ?? 25))) {
    return work();
  }
  try {
    return await work();
  } finally {
    await rm(lockPath, { force: true });
  }
}

/** True once the lock is ours; false when its directory does not exist. */
async function acquire(lockPath: string, timeoutMs: number, pollMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const me: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  for (;;) {
    try {
      const handle = await createLockFile(lockPath, me);
      if (handle !== null) {
        await handle.close();
        return true;
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
    const held = await readLock(lockPath);
    if (held !== null && isAbandoned(held)) {
      await removeIfSame(lockPath, held.ino);
      continue;
    }
    if (Date.now() >= deadline) {
      throw new FileLockTimeout(
        `another portaria command is changing this file (lock ${lockPath} held by ${describeHolder(held?.owner ?? null)}); try again when it has finished, or remove the lock if no portaria command is running`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/**
 * Creates the lock file with O_EXCL (0600) and writes `owner` into it: its handle, still
 * open, once the lock is ours; null when a lock file exists. Other failures (ENOENT: no
 * directory) are thrown, and never leave an unwritten lock behind.
 */
export async function createLockFile(
  lockPath: string,
  owner: LockOwner,
): Promise<FileHandle | null> {
  let handle: FileHandle;
  try {
    handle = await open(lockPath, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return null;
    throw err;
  }
  try {
    await handle.writeFile(`${JSON.stringify(owner)}\n`, 'utf8');
    return handle;
  } catch (err) {
    // Never left behind unwritten (others would wait for it), e.g. on a full disk.
    await handle.close().catch(() => {});
    await rm(lockPath, { force: true });
    throw err;
  }
}

/** An unwritten lock older than this was left by a creator that died before writing it. */
export const UNWRITTEN_LOCK_MAX_AGE_MS = 30_000;

export interface HeldLock {
  /** Null while the holder has not written it yet (or it is not one of ours). */
  readonly owner: LockOwner | null;
  readonly dev: number;
  readonly ino: number;
  /** Since its last change (creation, or a holder's refresh). */
  readonly ageMs: number;
}

/** The lock as it is now; null when it vanished meanwhile. */
export async function readLock(lockPath: string): Promise<HeldLock | null> {
  try {
    const { dev, ino, mtimeMs } = await stat(lockPath);
    const text = await readFile(lockPath, 'utf8');
    return { owner: parseOwner(text), dev, ino, ageMs: Date.now() - mtimeMs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function parseOwner(text: string): LockOwner | null {
  try {
    const value = JSON.parse(text) as Partial<LockOwner>;
    if (
      Number.isSafeInteger(value.pid) &&
      typeof value.host === 'string' &&
      typeof value.since === 'string'
    ) {
      return value as LockOwner;
    }
  } catch {
    // Still being written, or not ours: treated as held.
  }
  return null;
}

/** `pid 42 on host-a since 2026-…`, for messages. */
export function describeHolder(owner: LockOwner | null): string {
  return owner === null
    ? 'another process'
    : `pid ${owner.pid} on ${owner.host} since ${owner.since}`;
}

/** True only when no process has this pid (EPERM: it exists, another user's). */
export function processIsGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Left by a process of this host that is no longer running, or never written. */
function isAbandoned({ owner, ageMs }: HeldLock): boolean {
  if (owner === null) return ageMs > UNWRITTEN_LOCK_MAX_AGE_MS;
  if (owner.host !== hostname() || owner.pid === process.pid) return false;
  return processIsGone(owner.pid);
}

/** Removes the abandoned lock unless another run already replaced it (another inode). */
async function removeIfSame(lockPath: string, ino: number): Promise<void> {
  try {
    if ((await stat(lockPath)).ino === ino) await rm(lockPath, { force: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
