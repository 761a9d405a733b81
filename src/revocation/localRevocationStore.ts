/**
 * The default revocation store for one process: the list lives in memory (`isRevoked` is
 * synchronous, O(1)) and every revocation is appended to a log file and fsynced before its
 * promise resolves, so a resolved revocation survives SIGKILL and power loss. Corrupt lines
 * are skipped (the rest can only refuse more), the file is compacted atomically, and the
 * file's writer lock keeps a second process out. Not here: sharing between replicas.
 *
 * Appends and compaction run one at a time through one promise chain. A failed write
 * rejects while the entry stays enforced until restart (fail closed), and the next write
 * rewrites the whole file first, so a torn line never sits in front of later records. At
 * open, valid lines after a bad one are kept on purpose: each line carries its own check
 * and merging is order-free (latest cut-off and expiry win). Compaction rewrites the file
 * with the live entries once it holds at least `compactMinLines` lines and more than
 * `compactRatio` times the live entries. Once the writer lock is lost every write is
 * refused: another process may be writing the file.
 */
import { type FileHandle, mkdir, open, readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { ConfigError } from '../config/configError.js';
import { replaceFile } from '../lib/atomicWrite.js';
import { type Clock, epochSeconds } from '../lib/clock.js';
import { FileInUse, holdWriterLock, type WriterLock } from '../lib/writerLock.js';
import { MemoryRevocationStore } from './memoryRevocationStore.js';
import {
  assertRevocationRecord,
  decodeRevocationLine,
  encodeRevocationRecord,
  type RevocationRecord,
} from './revocationLogRecord.js';
import type { RevocationEntries, RevocationStore } from './revocationStore.js';

export interface LocalRevocationStoreOptions {
  /** Receives 'revocation log tail corrupt', 'revocation log line corrupt', 'revocation log compacted', 'revocation log compaction failed', 'revocation log lock lost'. */
  log?: (event: string, detail: Record<string, unknown>) => void;
  /** Compact when the file holds more than this many lines per live entry (default 2). */
  compactRatio?: number;
  /** Never compact a file shorter than this many lines (default 1000). */
  compactMinLines?: number;
}

export class LocalRevocationStore implements RevocationStore {
  readonly #file: string;
  readonly #clock: Clock;
  readonly #log: (event: string, detail: Record<string, unknown>) => void;
  readonly #compactRatio: number;
  readonly #compactMinLines: number;
  /** The list itself; this class makes it durable. */
  readonly #memory: MemoryRevocationStore;
  #handle: FileHandle | undefined;
  /** Held from before the file is read until close. */
  #lock: WriterLock | undefined;
  /** Set once the lock was found removed or taken over: no write may touch the file again. */
  #lockLost = false;
  /** Lines in the file (valid records, expired or not). */
  #lines = 0;
  /** Set when the file may end in a torn line: the next write rewrites it whole. */
  #needsRewrite = false;
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(file: string, clock: Clock, options: LocalRevocationStoreOptions) {
    this.#file = file;
    this.#clock = clock;
    this.#log = options.log ?? (() => {});
    this.#compactRatio = options.compactRatio ?? 2;
    this.#compactMinLines = options.compactMinLines ?? 1000;
    this.#memory = new MemoryRevocationStore(clock);
  }

  /** Loads (and repairs or compacts) the log, creating it and its directory (0700) if missing. */
  static async open(
    file: string,
    clock: Clock,
    options: LocalRevocationStoreOptions = {},
  ): Promise<LocalRevocationStore> {
    const store = new LocalRevocationStore(resolve(file), clock, options);
    try {
      await store.#load();
    } catch (error) {
      await store.#handle?.close().catch(() => {});
      await store.#lock?.release();
      if (error instanceof FileInUse) {
        throw new ConfigError([
          `revocation.file: ${store.#file} is in use by ${error.holder} (lock ${error.lockPath}): two gateways must not share one revocation file; stop the other one or give each its own file`,
        ]);
      }
      const code = (error as NodeJS.ErrnoException).code;
      if (code === undefined) throw error;
      throw new ConfigError([`revocation.file: cannot open ${store.#file} (${code})`]);
    }
    return store;
  }

  isRevoked(token: { tokenId: string; clientId: string; issuedAt: number }): boolean {
    return this.#memory.isRevoked(token);
  }

  clientCutoff(clientId: string): number | undefined {
    return this.#memory.clientCutoff(clientId);
  }

  revokeToken(tokenId: string, expiresAt: number): Promise<void> {
    return this.#revoke({ kind: 'token', tokenId, expiresAt });
  }

  revokeClient(clientId: string, issuedBefore: number, expiresAt: number): Promise<void> {
    return this.#revoke({ kind: 'client', clientId, issuedBefore, expiresAt });
  }

  /** Forgets expired entries and compacts the file when due. Never rejects: failures are logged. */
  async sweep(): Promise<void> {
    this.#dropExpired();
    if (this.#closed || !this.#compactDue()) return;
    try {
      await this.#enqueue(() => (this.#compactDue() ? this.#compact() : Promise.resolve()));
    } catch (error) {
      this.#log('revocation log compaction failed', {
        file: this.#file,
        error: (error as Error).message,
      });
    }
  }

  size(): number {
    return this.#memory.size();
  }

  entries(): RevocationEntries {
    return this.#memory.entries();
  }

  /** Waits for pending writes, then closes the file; later revocations reject. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#queue;
    try {
      await this.#handle?.close();
    } finally {
      this.#handle = undefined;
      await this.#lock?.release();
    }
  }

  async #revoke(record: RevocationRecord): Promise<void> {
    if (this.#closed) throw new Error('revocation store is closed');
    assertRevocationRecord(record);
    this.#apply(record);
    await this.#enqueue(() => this.#append(record));
  }

  /** Runs `task` after the writes before it, only while the lock is ours before and after. */
  #enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.#queue.then(async () => {
      await this.#assertLockHeld();
      await task();
      // After the fsync, before the caller is told: a takeover after this point reads the line.
      await this.#assertLockHeld();
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  async #append(record: RevocationRecord): Promise<void> {
    // The record is already in memory, so a whole rewrite includes it.
    if (this.#needsRewrite || this.#handle === undefined) return this.#rewrite();
    try {
      await this.#handle.appendFile(encodeRevocationRecord(record), 'utf8');
      await this.#handle.sync();
      this.#lines += 1;
    } catch (error) {
      this.#needsRewrite = true;
      throw error;
    }
  }

  async #assertLockHeld(): Promise<void> {
    if (!this.#lockLost && (await this.#lock?.check()) !== false) return;
    this.#lockLost = true;
    throw new Error(
      `revocation log ${this.#file}: its lock ${this.#lock?.path} was removed or taken over by another process; revocations are not written until restart`,
    );
  }

  #onLockLost(): void {
    if (this.#lockLost) return;
    this.#lockLost = true;
    this.#log('revocation log lock lost', { file: this.#file, lock: this.#lock?.path });
  }

  async #load(): Promise<void> {
    await mkdir(dirname(this.#file), { recursive: true, mode: 0o700 });
    // Before reading: another process's compaction must not replace the file under us.
    this.#lock = await holdWriterLock(this.#file, { onLost: () => this.#onLockLost() });
    let text: string;
    try {
      text = await readFile(this.#file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      return this.#rewrite();
    }
    // A bad line was reported by #replay: rewrite the file without it.
    if (!this.#replay(text)) return this.#rewrite();
    if (this.#compactDue()) return this.#compact();
    this.#handle = await open(this.#file, 'a', 0o600);
  }

  /** Replays every valid line; returns false (after reporting) when some line was bad. */
  #replay(text: string): boolean {
    const now = epochSeconds(this.#clock);
    const lines = text.split('\n');
    // What follows the last newline: '' for a clean file, else a line cut short.
    const tail = lines.pop() ?? '';
    const bad: number[] = [];
    let kept = 0;
    lines.forEach((line, index) => {
      const record = decodeRevocationLine(line);
      if (record === undefined) {
        bad.push(index + 1);
        return;
      }
      kept += 1;
      if (record.expiresAt >= now) this.#apply(record);
    });
    if (tail !== '') bad.push(lines.length + 1);
    this.#lines = kept;
    const first = bad[0];
    if (first === undefined) return true;
    const total = lines.length + (tail === '' ? 0 : 1);
    const atTail = first === total - bad.length + 1;
    this.#log(atTail ? 'revocation log tail corrupt' : 'revocation log line corrupt', {
      file: this.#file,
      line: first,
      dropped: bad.length,
      kept,
    });
    return false;
  }

  #apply(record: RevocationRecord): void {
    this.#memory.apply(record);
  }

  #dropExpired(): void {
    this.#memory.sweep();
  }

  #compactDue(): boolean {
    return (
      this.#needsRewrite ||
      (this.#lines >= this.#compactMinLines && this.#lines > this.#compactRatio * this.size())
    );
  }

  async #compact(): Promise<void> {
    const before = this.#lines;
    await this.#rewrite();
    this.#log('revocation log compacted', { file: this.#file, before, after: this.#lines });
  }

  /** Replaces the file with the live entries, then reopens the append handle on it. */
  async #rewrite(): Promise<void> {
    this.#dropExpired();
    const { tokens, clients } = this.#memory.entries();
    let data = '';
    for (const entry of tokens) data += encodeRevocationRecord({ kind: 'token', ...entry });
    for (const entry of clients) data += encodeRevocationRecord({ kind: 'client', ...entry });
    await replaceFile(dirname(this.#file), basename(this.#file), data);
    // The old handle points at the replaced inode: never append through it again.
    const previous = this.#handle;
    this.#handle = undefined;
    this.#lines = this.size();
    this.#needsRewrite = false;
    await previous?.close().catch(() => {});
    this.#handle = await open(this.#file, 'a', 0o600);
  }
}
