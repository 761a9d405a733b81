/**
 * The lock file both file locks use: `.<name>.lock` beside the target (a dotfile: loaders
 * and the reload watcher ignore it), created with O_EXCL and holding its owner (pid, host,
 * since). `editLock.ts` holds one for a single read-modify-write of a file;
 * `writerLock.ts` holds one for as long as a process writes the file.
 */
import { type FileHandle, open, readFile, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

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
