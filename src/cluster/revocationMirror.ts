/**
 * A worker's revocation list: an in-memory copy of the primary's store. It is filled
 * from the primary's snapshot before the worker listens, then every revocation the
 * primary stores (admin API, Redis pub/sub, a full Redis load) arrives as a message and
 * is applied before the primary answers the admin API (docs/workers.md). Lookups stay
 * two `Map` reads, as in one process.
 *
 * Revoking through a worker (`App.revoke`) asks the primary, which stores the entry and
 * sends it to every worker. With the Redis store, `isStale()` follows the time the
 * primary last knew its list current (pushed every second).
 */
import type { Clock } from '../lib/clock.js';
import { MemoryRevocationStore } from '../revocation/memoryRevocationStore.js';
import type { RevocationRecord } from '../revocation/revocationLogRecord.js';
import type { RevocationEntries, RevocationStore } from '../revocation/revocationStore.js';
import type { RevocationSnapshot } from './messages.js';
import type { WorkerChannel } from './workerChannel.js';

/** How long a worker waits for the primary to store a revocation. */
const REVOKE_TIMEOUT_MS = 30_000;

export class RevocationMirror implements RevocationStore {
  readonly #memory: MemoryRevocationStore;
  readonly #clock: Clock;
  readonly #channel: WorkerChannel;
  readonly #maxLagMs: number;
  #syncedAtMs: number | null = null;

  private constructor(clock: Clock, channel: WorkerChannel, maxLagSeconds: number) {
    this.#memory = new MemoryRevocationStore(clock);
    this.#clock = clock;
    this.#channel = channel;
    this.#maxLagMs = maxLagSeconds * 1000;
    channel.on('revocation', (message) => {
      this.#memory.apply(message.record);
      if (message.id !== undefined) channel.answer(message.id, true);
    });
    channel.on('revocation-sync', (message) => {
      this.#syncedAtMs = message.syncedAtMs;
    });
  }

  /** Subscribes to the primary's revocations and loads its list (before listening). */
  static async open(
    clock: Clock,
    channel: WorkerChannel,
    maxLagSeconds: number,
  ): Promise<RevocationMirror> {
    const mirror = new RevocationMirror(clock, channel, maxLagSeconds);
    const snapshot = (await channel.ask((id) => ({ portaria: 'hello', id }), 60_000)) as
      | RevocationSnapshot
      | undefined;
    if (snapshot === undefined) throw new Error('the primary process sent no revocation list');
    for (const record of snapshot.records) mirror.#memory.apply(record);
    mirror.#syncedAtMs = snapshot.syncedAtMs;
    return mirror;
  }

  isRevoked(token: { tokenId: string; clientId: string; issuedAt: number }): boolean {
    return this.#memory.isRevoked(token);
  }

  clientCutoff(clientId: string): number | undefined {
    return this.#memory.clientCutoff(clientId);
  }

  /** As the Redis store's: the primary's list last known current longer ago than allowed. */
  isStale(): boolean {
    if (this.#syncedAtMs === null) return true;
    const age = this.#clock.now() - this.#syncedAtMs;
    return age > this.#maxLagMs || age < 0;
  }

  revokeToken(tokenId: string, expiresAt: number): Promise<void> {
    return this.#revoke({ kind: 'token', tokenId, expiresAt });
  }

  revokeClient(clientId: string, issuedBefore: number, expiresAt: number): Promise<void> {
    return this.#revoke({ kind: 'client', clientId, issuedBefore, expiresAt });
  }

  size(): number {
    return this.#memory.size();
  }

  sweep(): void {
    this.#memory.sweep();
  }

  entries(): RevocationEntries {
    return this.#memory.entries();
  }

  async close(): Promise<void> {}

  async #revoke(record: RevocationRecord): Promise<void> {
    const stored = await this.#channel.ask(
      (id) => ({ portaria: 'revoke', id, record }),
      REVOKE_TIMEOUT_MS,
    );
    if (stored !== true) throw new Error('the primary process did not store the revocation');
    this.#memory.apply(record);
  }
}
