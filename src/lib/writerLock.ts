/**
 * An exclusive lock a process holds on one file for as long as it uses it (the local
 * revocation log, the Redis store's queue): without it a second process on the same file
 * keeps appending to a file the first one replaced by a rename, and the revocations it
 * acknowledged are gone at the next start. The lock file of `lockFile.ts` names its owner
 * (pid, host, since; on Linux the boot id, pid namespace and process start tick); the
 * holder refreshes it every `refreshMs` and checks it is still its own, and a lock found
 * removed or replaced is lost for good (`onLost`: stop writing).
 *
 * An existing lock is taken over only when its holder is provably gone: its pid is this
 * process's on the same host and boot, unheld (pid 1 of a restarted container); same host,
 * boot and pid namespace, and its pid is not running or started at another tick; not
 * refreshed for `staleMs` (a holder that cannot be asked, on another host); or never
 * written and older than 30 s. A field written off Linux is not compared. Takeovers run
 * under `withEditLock`, so two starting processes never both take it. Advisory; two live
 * processes with one host name and boot and the same pid in different pid namespaces are
 * not told apart (the second takes over, the first finds the lock lost).
 */
import { readFileSync, readlinkSync, statSync, unlinkSync } from 'node:fs';
import { type FileHandle, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { FileLockTimeout, withEditLock } from './editLock.js';
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

export interface WriterLockOptions {
  /** How often the holder refreshes the lock and checks it is still its own (default 10 s). */
  readonly refreshMs?: number;
  /** A lock whose holder cannot be asked is stale once not refreshed for this long (default 60 s). */
  readonly staleMs?: number;
  /** Called once when the refresh finds the lock removed or replaced. */
  readonly onLost?: () => void;
}

/** Another live process (or this one) holds the file's lock. */
export class FileInUse extends Error {
  override readonly name = 'FileInUse';
  readonly lockPath: string;
  /** `pid 42 on host-a since …`, `this process (pid 42)` or `another process`. */
  readonly holder: string;
  constructor(file: string, lockPath: string, holder: string) {
    super(`${file} is in use by ${holder} (lock ${lockPath})`);
    this.lockPath = lockPath;
    this.holder = holder;
  }
}

export interface WriterLock {
  readonly path: string;
  /** Whether the lock file is still ours now; false for good once it was found otherwise. */
  check(): Promise<boolean>;
  /** Stops refreshing and removes the lock file if it is still ours. Never rejects. */
  release(): Promise<void>;
}

interface Entry {
  readonly path: string;
  readonly dev: number;
  readonly ino: number;
}

/** Locks this process holds: recognised when it asks again, removed at exit. */
const heldHere = new Set<Entry>();
/** Acquisitions run one at a time here, so a second one sees the first registered. */
let acquiring: Promise<unknown> = Promise.resolve();
let exitHookInstalled = false;

/** Takes the lock of `file` (its directory must exist: ENOENT otherwise) or throws `FileInUse`. */
export function holdWriterLock(file: string, options: WriterLockOptions = {}): Promise<WriterLock> {
  const run = acquiring.then(() => acquire(file, options));
  acquiring = run.catch(() => {});
  return run;
}

async function acquire(file: string, options: WriterLockOptions): Promise<WriterLock> {
  const lockPath = lockPathFor(file);
  const staleMs = options.staleMs ?? 60_000;
  const me = thisProcess();
  // Each round takes the lock or removes a stale one; a lock that keeps changing under us
  // is busy, not stale.
  for (let round = 0; round < 5; round++) {
    const handle = await createLockFile(lockPath, me);
    if (handle !== null) return hold(lockPath, handle, options);
    const held = await readLock(lockPath);
    if (held === null) continue;
    if ([...heldHere].some((e) => e.dev === held.dev && e.ino === held.ino)) {
      throw new FileInUse(file, lockPath, `this process (pid ${process.pid})`);
    }
    if (!isStale(held, me, staleMs)) {
      throw new FileInUse(file, lockPath, describeHolder(held.owner));
    }
    try {
      await withEditLock(lockPath, () => removeIfStill(lockPath, held, me, staleMs), {
        timeoutMs: 5000,
      });
    } catch (error) {
      if (!(error instanceof FileLockTimeout)) throw error;
      throw new FileInUse(file, lockPathFor(lockPath), 'another process taking over a stale lock');
    }
  }
  throw new FileInUse(file, lockPath, 'another process (its lock kept changing)');
}

async function hold(
  lockPath: string,
  handle: FileHandle,
  options: WriterLockOptions,
): Promise<WriterLock> {
  let entry: Entry;
  try {
    const { dev, ino } = await handle.stat();
    entry = { path: lockPath, dev, ino };
  } catch (error) {
    await handle.close().catch(() => {});
    await rm(lockPath, { force: true });
    throw error;
  }
  heldHere.add(entry);
  installExitHook();
  let lost = false;
  let released = false;
  let refreshing = false;
  const stop = () => {
    clearInterval(timer);
    heldHere.delete(entry);
  };
  const check = async (): Promise<boolean> => {
    if (lost || released) return false;
    try {
      const now = await stat(lockPath);
      if (now.dev === entry.dev && now.ino === entry.ino) return true;
    } catch (error) {
      // Only a missing lock proves it lost; a failing stat (EIO) proves nothing.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return true;
    }
    if (released) return false;
    lost = true;
    stop();
    options.onLost?.();
    return false;
  };
  const timer = setInterval(async () => {
    if (refreshing) return;
    refreshing = true;
    try {
      if (!(await check())) return;
      const now = new Date();
      await handle.utimes(now, now).catch(() => {});
    } finally {
      refreshing = false;
    }
  }, options.refreshMs ?? 10_000);
  timer.unref();
  return {
    path: lockPath,
    check,
    async release() {
      if (released) return;
      released = true;
      stop();
      await handle.close().catch(() => {});
      if (lost) return;
      try {
        const now = await stat(lockPath);
        if (now.dev === entry.dev && now.ino === entry.ino) await rm(lockPath, { force: true });
      } catch {
        // Gone already, or unreadable: a later start judges what is left.
      }
    },
  };
}

function isStale(held: HeldLock, me: LockOwner, staleMs: number): boolean {
  const { owner, ageMs } = held;
  if (owner === null) return ageMs > UNWRITTEN_LOCK_MAX_AGE_MS;
  const sameMachine = owner.host === me.host && unknownOrEqual(owner.boot, me.boot);
  // Not held by this process (checked first): an earlier run with this pid left it.
  if (sameMachine && owner.pid === me.pid) return true;
  if (sameMachine && unknownOrEqual(owner.pidns, me.pidns)) {
    if (processIsGone(owner.pid)) return true;
    const start = startTickOf(owner.pid);
    if (owner.start !== undefined && start !== undefined) return start !== owner.start;
  }
  return ageMs > staleMs;
}

/** A field one side could not read (not Linux, or a hand-written lock) is not compared. */
function unknownOrEqual(a: string | undefined, b: string | undefined): boolean {
  return a === undefined || b === undefined || a === b;
}

/** Under the takeover lock: removes the stale lock unless it changed since it was judged. */
async function removeIfStill(
  lockPath: string,
  judged: HeldLock,
  me: LockOwner,
  staleMs: number,
): Promise<void> {
  const now = await readLock(lockPath);
  if (now === null || now.dev !== judged.dev || now.ino !== judged.ino) return;
  if (isStale(now, me, staleMs)) await rm(lockPath, { force: true });
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const entry of heldHere) {
      try {
        const now = statSync(entry.path);
        if (now.dev === entry.dev && now.ino === entry.ino) unlinkSync(entry.path);
      } catch {
        // Nothing more can be done while exiting.
      }
    }
  });
}

let identity: Pick<LockOwner, 'boot' | 'pidns' | 'start'> | undefined;

function thisProcess(): LockOwner {
  identity ??= {
    boot: attempt(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()),
    pidns: attempt(() => readlinkSync('/proc/self/ns/pid')),
    start: startTickOf(process.pid),
  };
  return { pid: process.pid, host: hostname(), since: new Date().toISOString(), ...identity };
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); Linux only. */
function startTickOf(pid: number): string | undefined {
  return attempt(() => {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    return text.slice(text.lastIndexOf(')') + 2).split(' ')[19];
  });
}

function attempt(read: () => string | undefined): string | undefined {
  try {
    return read() || undefined;
  } catch {
    return undefined;
  }
}
