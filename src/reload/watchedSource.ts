/**
 * A running value (client registry, key ring, route table) reloaded from files while
 * traffic flows, and kept as it is when the new files do not validate. `fs.watch` and a
 * poll both start a check (the poll survives what watching misses: network filesystems,
 * Kubernetes' symlink swaps) and reloads only when the contents' fingerprint changed; a
 * signal always reloads. One reload at a time (`singleFlight.ts`).
 *
 * `fs.watch` is on each watched file's parent directory, with ~100 ms of debounce, and its
 * events are not filtered by name: a Kubernetes Secret update renames `..data`, not the
 * watched file. A watcher that errors, or whose directory was replaced under its name, is
 * made again on a later poll. The first fingerprint is `since`, taken before the initial
 * load, so a change made while the process started (it may wait seconds for Redis) is
 * reloaded, not taken as the baseline. A failed load keeps the running value and is not
 * retried for the same contents, except every `retryFailedMs`: a load can fail by the
 * clock alone (a key that activates a moment later by this replica's clock). A path
 * briefly missing (a rename-over) is retried once after 50 ms before the load counts as
 * failed.
 */
import { type FSWatcher, watch as fsWatch, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ConfigError } from '../config/configError.js';
import {
  type ContentFingerprint,
  contentFingerprint,
  type EntryFilter,
} from './contentFingerprint.js';
import { singleFlight } from './singleFlight.js';

export type ReloadOutcome = 'applied' | 'unchanged' | 'failed';
export type ReloadReason = 'watch' | 'poll' | 'signal' | 'manual';

export interface WatchedSourceOptions<T> {
  /** Bounded source name for logs and metrics: 'clients', 'keys', 'routes'. */
  readonly name: string;
  /** Files or directories whose contents make up the source. */
  readonly paths: readonly string[];
  /** Which files of a watched directory belong to the source (default: every one). */
  readonly directoryEntries?: EntryFilter;
  /** Reads and validates the source; throws `ConfigError` (problems) or any Error. */
  readonly load: () => Promise<T>;
  /** Swaps the running value; must not throw (if it does, the outcome is 'failed'). */
  readonly apply: (value: T) => void;
  readonly pollIntervalMs: number;
  /** `reload.enabled`: fs.watch + polling. false: reloads only on `trigger()`. */
  readonly watch: boolean;
  /** With `watch`, false polls without fs.watch (tests prove polling alone suffices). Default true. */
  readonly fsWatch?: boolean;
  /** Quiet time after the last change event before the check runs. Default 100 ms. */
  readonly debounceMs?: number;
  /** How long failed contents are left alone before a check loads them again. Default 30 s. */
  readonly retryFailedMs?: number;
  /**
   * The fingerprint of `paths` taken before the running value was loaded (by
   * `contentFingerprint(paths, directoryEntries)`); default: one taken now.
   */
  readonly since?: Promise<ContentFingerprint>;
  /** Called once per reload that ran ('applied' or 'failed'); errors it throws are ignored. */
  readonly onOutcome?: (name: string, outcome: ReloadOutcome, problems: readonly string[]) => void;
}

export interface WatchedSource {
  /** The source's name (`options.name`). */
  readonly name: string;
  trigger(reason: ReloadReason): Promise<ReloadOutcome>;
  close(): void;
}

const DEBOUNCE_MS = 100;
const MAX_DEBOUNCE_MS = 1000;
const RETRY_DELAY_MS = 50;
const RETRY_FAILED_MS = 30_000;

type Attempt<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: unknown };

export function watchSource<T>(options: WatchedSourceOptions<T>): WatchedSource {
  const { name, paths, load, apply, pollIntervalMs, onOutcome } = options;
  const fingerprint = () => contentFingerprint(paths, options.directoryEntries);
  const debounceMs = options.debounceMs ?? DEBOUNCE_MS;
  const retryFailedMs = options.retryFailedMs ?? RETRY_FAILED_MS;
  let closed = false;
  let known: string | null = null;
  /** When the known contents last failed to load (`performance.now()`), or null. */
  let failedAt: number | null = null;
  const ready = (options.since ?? fingerprint()).then(
    (f) => {
      known ??= f.digest;
    },
    () => undefined,
  );

  const report = (outcome: ReloadOutcome, problems: readonly string[]): void => {
    try {
      onOutcome?.(name, outcome, problems);
    } catch {
      // A logging or metrics failure must not break reloading.
    }
  };

  const attempt = async (): Promise<Attempt<T>> => {
    try {
      return { ok: true, value: await load() };
    } catch (error) {
      return { ok: false, error };
    }
  };

  const anyMissing = async (): Promise<boolean> => (await fingerprint()).missing;

  const runOnce = async (force: boolean): Promise<ReloadOutcome> => {
    await ready;
    if (closed) return 'unchanged';
    let print = await fingerprint();
    if (
      !force &&
      print.digest === known &&
      (failedAt === null || performance.now() - failedAt < retryFailedMs)
    ) {
      return 'unchanged';
    }
    let result = await attempt();
    if (!result.ok && (print.missing || isEnoent(result.error) || (await anyMissing()))) {
      await delay(RETRY_DELAY_MS);
      print = await fingerprint();
      result = await attempt();
    }
    known = print.digest;
    if (closed) return 'unchanged';
    if (!result.ok) {
      failedAt = performance.now();
      report('failed', problemsOf(result.error));
      return 'failed';
    }
    try {
      apply(result.value);
    } catch (error) {
      failedAt = performance.now();
      report('failed', [`apply: ${messageOf(error)}`]);
      return 'failed';
    }
    failedAt = null;
    report('applied', []);
    return 'applied';
  };

  const next = singleFlight((force: boolean) =>
    runOnce(force).catch((error: unknown): ReloadOutcome => {
      report('failed', problemsOf(error));
      return 'failed';
    }),
  );
  const trigger = (reason: ReloadReason): Promise<ReloadOutcome> =>
    closed ? Promise.resolve('unchanged') : next(reason === 'signal' || reason === 'manual');

  // Trailing debounce: the check runs `debounceMs` after the LAST relevant event, so a file
  // written in place in several steps is read once its writer paused, not part-way; a
  // stream of events that never pauses still gets a check every MAX_DEBOUNCE_MS. One
  // timer, re-armed (refresh(): no allocation per event).
  let debounce: NodeJS.Timeout | undefined;
  let firstEventAt = 0;
  const onEvent = (): void => {
    if (closed) return;
    const now = performance.now();
    if (debounce === undefined) {
      firstEventAt = now;
      debounce = setTimeout(() => {
        debounce = undefined;
        void trigger('watch');
      }, debounceMs);
      debounce.unref();
    } else if (now - firstEventAt < MAX_DEBOUNCE_MS) {
      debounce.refresh();
    }
  };

  const watchers = new Map<string, FSWatcher | null>();
  /** Per watched directory: the entry names that matter, or null for all (a watched directory). */
  const relevantNames = new Map<string, ReadonlySet<string> | null>();
  /** Per watched directory: the directory its watcher was made on (device and inode). */
  const watchedIdentity = new Map<string, string>();
  const arm = (): void => {
    for (const [dir, existing] of watchers) {
      // A directory replaced under its name (`mv new dir`, `ln -sfn other dir`): the old
      // watcher sees nothing any more; watch the one the name now leads to.
      if (existing !== null && identityOf(dir) !== watchedIdentity.get(dir)) {
        existing.close();
        watchers.set(dir, null);
      } else if (existing !== null) {
        continue;
      }
      try {
        const names = relevantNames.get(dir) ?? null;
        const identity = identityOf(dir);
        const watcher = fsWatch(dir, { persistent: true }, (_event, filename) => {
          if (isRelevant(names, filename)) onEvent();
        });
        watcher.on('error', () => {
          watcher.close();
          if (watchers.get(dir) === watcher) watchers.set(dir, null);
        });
        watchers.set(dir, watcher);
        watchedIdentity.set(dir, identity);
      } catch {
        // The directory is missing or cannot be watched: polling continues, a later poll retries.
      }
    }
  };

  let poller: NodeJS.Timeout | undefined;
  if (options.watch) {
    if (options.fsWatch !== false) {
      for (const [dir, names] of watchedDirectories(paths)) {
        watchers.set(dir, null);
        relevantNames.set(dir, names);
      }
      arm();
    }
    poller = setInterval(() => {
      arm();
      void trigger('poll');
    }, pollIntervalMs);
    poller.unref();
  }

  return {
    name,
    trigger,
    close(): void {
      closed = true;
      clearInterval(poller);
      clearTimeout(debounce);
      for (const watcher of watchers.values()) watcher?.close();
      watchers.clear();
    },
  };
}

/** The directory a path leads to now (symlinks followed): device and inode; '' if missing. */
function identityOf(path: string): string {
  try {
    const { dev, ino } = statSync(path);
    return `${dev}:${ino}`;
  } catch {
    return '';
  }
}

/**
 * The directories to watch, each with the entry names that matter in it: for a file, its
 * own name (and, see isRelevant, Kubernetes' `..data` swaps); for a watched directory,
 * every entry (null). Other files in a parent directory (a log file, say) are ignored.
 */
export function watchedDirectories(paths: readonly string[]): Map<string, Set<string> | null> {
  const dirs = new Map<string, Set<string> | null>();
  for (const path of paths) {
    let isDirectory = false;
    try {
      isDirectory = statSync(path).isDirectory();
    } catch {
      // Missing: watch where it would appear.
    }
    if (isDirectory) {
      dirs.set(path, null);
      continue;
    }
    const dir = dirname(path);
    const names = dirs.get(dir);
    if (names === null) continue;
    dirs.set(dir, new Set([...(names ?? []), basename(path)]));
  }
  return dirs;
}

/**
 * Kubernetes updates a mounted ConfigMap or Secret by renaming a `..data` symlink (and
 * creating `..<timestamp>` directories), never the file name itself: those count too. An
 * event without a file name (some platforms) always counts.
 */
export function isRelevant(
  names: ReadonlySet<string> | null,
  filename: string | Buffer | null,
): boolean {
  if (names === null || filename === null) return true;
  const name = filename.toString();
  return names.has(name) || name.startsWith('..');
}

function problemsOf(error: unknown): readonly string[] {
  return error instanceof ConfigError ? error.problems : [messageOf(error)];
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function isEnoent(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}
