/**
 * The durable queue of revocations accepted while Redis was unreachable
 * (`revocation.whileRedisDown: queue`). Same line format as the local store's log
 * (`revocationLogRecord`); each record is appended and fsynced before `append` resolves,
 * so an acknowledged revocation survives a crash or SIGKILL until it reached Redis.
 *
 * The Redis store takes a snapshot (`records()`), writes it to Redis, then `drop`s
 * exactly that many records from the front: records appended meanwhile stay queued.
 * Dropping everything truncates the file in place; dropping part rewrites it
 * atomically with the rest.
 *
 * The file (directory 0700, file 0600) is created on the first append only: a store
 * that never queues never writes to the disk. Opening reads every valid line; a bad
 * line is reported through `log` ('revocation queue line corrupt') and skipped — a torn
 * last line is a record whose fsync never completed, so it was never acknowledged.
 *
 * Operations run one at a time through a promise chain.
 */
import { type FileHandle, open, readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { ConfigError } from '../config/configError.js';
import { replaceFile } from '../lib/atomicWrite.js';
import {
  decodeRevocationLine,
  encodeRevocationRecord,
  type RevocationRecord,
} from './revocationLogRecord.js';

export class RevocationQueue {
  readonly #file: string;
  #records: RevocationRecord[] = [];
  #handle: FileHandle | undefined;
  /** Set when the file may not match `#records` (a failed write): the next write rewrites it. */
  #needsRewrite = false;
  #chain: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(file: string) {
    this.#file = file;
  }

  /** Reads the queue left by an earlier run (none: empty). */
  static async open(
    file: string,
    log: (event: string, detail: Record<string, unknown>) => void = () => {},
  ): Promise<RevocationQueue> {
    const queue = new RevocationQueue(resolve(file));
    let text = '';
    try {
      text = await readFile(queue.#file, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') {
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
    return this.#enqueue(async () => {
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
    });
  }

  /** Removes the `count` oldest records (those a replay has written to Redis). */
  drop(count: number): Promise<void> {
    return this.#enqueue(async () => {
      const rest = this.#records.slice(count);
      if (rest.length === this.#records.length && !this.#needsRewrite) return;
      if (rest.length === 0 && this.#handle !== undefined && !this.#needsRewrite) {
        await this.#handle.truncate(0);
        await this.#handle.sync();
      } else {
        await this.#rewrite(rest);
      }
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
