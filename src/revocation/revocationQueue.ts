/**
 * The durable queue of revocations accepted while Redis was unreachable
 * (`revocation.whileRedisDown: queue`): each record is appended and fsynced before `append`
 * resolves, so an acknowledged revocation survives a crash until it reached Redis. The
 * store writes a snapshot to Redis and then drops exactly that many records from the
 * front, so records appended meanwhile stay queued. The local log's line format
 * (`revocationLogRecord.ts`); a torn last line is a record never acknowledged, skipped.
 *
 * The file (0600) is created at the first append, so a store that never queues writes
 * nothing. Its writer lock is taken at open (a partial drop renames a new file over the
 * one another process would append to) or, when the directory is read-only then, before
 * the first write; once lost, every write rejects.
 */
import { type FileHandle, mkdir, open, readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { ConfigError } from '../config/configError.js';
import { replaceFile } from '../lib/atomicWrite.js';
import { FileInUse, holdWriterLock, type WriterLock } from '../lib/writerLock.js';
import {
  decodeRevocationLine,
  encodeRevocationRecord,
  type RevocationRecord,
} from './revocationLogRecord.js';

export class RevocationQueue {
  readonly #file: string;
  readonly #log: (event: string, detail: Record<string, unknown>) => void;
  /** Taken at open when possible, else before the first write; held until close. */
  #lock: WriterLock | undefined;
  #lockLost = false;
  #records: RevocationRecord[] = [];
  #handle: FileHandle | undefined;
  /** Set when the file may not match `#records` (a failed write): the next write rewrites it. */
  #needsRewrite = false;
  #chain: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(file: string, log: (event: string, detail: Record<string, unknown>) => void) {
    this.#file = file;
    this.#log = log;
  }

  /** Reads the queue left by an earlier run (none: empty). */
  static async open(
    file: string,
    log: (event: string, detail: Record<string, unknown>) => void = () => {},
  ): Promise<RevocationQueue> {
    const queue = new RevocationQueue(resolve(file), log);
    try {
      await queue.#takeLock();
    } catch (error) {
      if (error instanceof FileInUse) {
        throw new ConfigError([
          `revocation.queueFile: ${queue.#file} is in use by ${error.holder} (lock ${error.lockPath}): each gateway needs its own queue file`,
        ]);
      }
      // Not writable now (EROFS, EACCES, ENOTDIR): the first write takes it, or fails.
    }
    let text = '';
    try {
      text = await readFile(queue.#file, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') {
        await queue.#lock?.release();
        throw new ConfigError([`revocation.queueFile: cannot read ${queue.#file} (${code})`]);
      }
    }
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    let bad = 0;
    for (const line of lines) {
      const record = decodeRevocationLine(line);
      if (record === undefined) bad += 1;
      else queue.#records.push(record);
    }
    if (bad > 0) {
      queue.#needsRewrite = true;
      log('revocation queue line corrupt', {
        file: queue.#file,
        dropped: bad,
        kept: queue.#records.length,
      });
    }
    return queue;
  }

  get file(): string {
    return this.#file;
  }

  get size(): number {
    return this.#records.length;
  }

  /** The records queued now, oldest first (a copy). */
  records(): readonly RevocationRecord[] {
    return [...this.#records];
  }

  /** Appends one record; resolves once it is fsynced. */
  append(record: RevocationRecord): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('revocation queue is closed'));
    return this.#enqueue(() =>
      this.#write(async () => {
        if (this.#needsRewrite || this.#handle === undefined) {
          await this.#rewrite([...this.#records, record]);
          this.#records.push(record);
          return;
        }
        try {
          await this.#handle.appendFile(encodeRevocationRecord(record), 'utf8');
          await this.#handle.sync();
        } catch (error) {
          this.#needsRewrite = true;
          throw error;
        }
        this.#records.push(record);
      }),
    );
  }

  /** Removes the `count` oldest records (those a replay has written to Redis). */
  drop(count: number): Promise<void> {
    return this.#enqueue(async () => {
      const rest = this.#records.slice(count);
      if (rest.length === this.#records.length && !this.#needsRewrite) return;
      await this.#write(async () => {
        if (rest.length === 0 && this.#handle !== undefined && !this.#needsRewrite) {
          await this.#handle.truncate(0);
          await this.#handle.sync();
        } else {
          await this.#rewrite(rest);
        }
      });
      this.#records = rest;
    });
  }

  /** Waits for pending writes, then closes the file; later appends reject. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#chain;
    await this.#handle?.close().catch(() => {});
    this.#handle = undefined;
    await this.#lock?.release();
  }

  /** Runs a write while the lock is ours, before and after (after: before the caller is told). */
  async #write(task: () => Promise<void>): Promise<void> {
    await this.#assertLockHeld();
    await task();
    await this.#assertLockHeld();
  }

  async #takeLock(): Promise<void> {
    await mkdir(dirname(this.#file), { recursive: true, mode: 0o700 });
    this.#lock = await holdWriterLock(this.#file, { onLost: () => this.#onLockLost() });
  }

  /** Takes the lock if open could not; throws once it is lost (another process may write). */
  async #assertLockHeld(): Promise<void> {
    if (this.#lock === undefined && !this.#lockLost) await this.#takeLock();
    if (!this.#lockLost && (await this.#lock?.check()) === true) return;
    this.#lockLost = true;
    throw new Error(
      `revocation queue ${this.#file}: its lock ${this.#lock?.path} was removed or taken over by another process; nothing is queued until restart`,
    );
  }

  #onLockLost(): void {
    if (this.#lockLost) return;
    this.#lockLost = true;
    this.#log('revocation queue lock lost', { file: this.#file, lock: this.#lock?.path });
  }

  #enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.#chain.then(task);
    this.#chain = run.catch(() => {});
    return run;
  }

  /** Replaces the file with `records`, then (re)opens the append handle on it. */
  async #rewrite(records: readonly RevocationRecord[]): Promise<void> {
    const data = records.map(encodeRevocationRecord).join('');
    await replaceFile(dirname(this.#file), basename(this.#file), data);
    const previous = this.#handle;
    this.#handle = undefined;
    await previous?.close().catch(() => {});
    this.#handle = await open(this.#file, 'a', 0o600);
    this.#needsRewrite = false;
  }
}
