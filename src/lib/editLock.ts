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
 * The lock file itself (`lockFile.ts`) is the one `writerLock.ts` holds.
 */
import { rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import {
  createLockFile,
  describeHolder,
  type HeldLock,
  type LockOwner,
  lockPathFor,
  processIsGone,
  readLock,
  UNWRITTEN_LOCK_MAX_AGE_MS,
} from './lockFile.js';

export interface EditLockOptions {
  /** How long to wait for another holder (default 10 s). */
  readonly timeoutMs?: number;
  /** Pause between attempts (default 25 ms). */
  readonly pollMs?: number;
}

/** The lock could not be taken in time; the message names the holder. */
export class FileLockTimeout extends Error {
  override readonly name = 'FileLockTimeout';
}

/**
 * Runs `work` while holding the lock of `file`; the lock is released however it ends.
 * When the file's directory does not exist there is nothing to change or to lock:
 * `work` runs at once and reports the missing file its own way (a caller that creates
 * the directory does so before taking the lock).
 */
export async function withEditLock<T>(
  file: string,
  work: () => Promise<T>,
  options: EditLockOptions = {},
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
