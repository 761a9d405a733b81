/**
 * The primary's revocation store as the admin API sees it: the configured store (local
 * log, memory or Redis, opened by the primary only), and every revocation it accepts
 * applied by every registered worker before the call returns, so the admin API's 201
 * means every worker refuses the token (docs/workers.md).
 *
 * A worker that does not confirm within `ACK_TIMEOUT_MS` is killed before the answer
 * (a hung worker must not keep serving a revoked token); its replacement loads the whole
 * list before it listens. Entries the store applies on its own (Redis pub/sub and full
 * loads) are sent to the workers without waiting (`forward`).
 */
import type { Worker } from 'node:cluster';
import type { RevocationRecord } from '../revocation/revocationLogRecord.js';
import type { RevocationEntries, RevocationStore } from '../revocation/revocationStore.js';
import type { RevocationSnapshot } from './messages.js';
import type { WorkerPool } from './workerPool.js';

const ACK_TIMEOUT_MS = 5000;

export class RevocationFanout {
  readonly #store: RevocationStore;
  readonly #pool: WorkerPool;
  readonly #syncedAtMs: () => number | null;

  constructor(store: RevocationStore, pool: WorkerPool, syncedAtMs: () => number | null) {
    this.#store = store;
    this.#pool = pool;
    this.#syncedAtMs = syncedAtMs;
  }

  async revokeToken(tokenId: string, expiresAt: number): Promise<void> {
    await this.#store.revokeToken(tokenId, expiresAt);
    await this.#everyWorker({ kind: 'token', tokenId, expiresAt });
  }

  async revokeClient(clientId: string, issuedBefore: number, expiresAt: number): Promise<void> {
    await this.#store.revokeClient(clientId, issuedBefore, expiresAt);
    await this.#everyWorker({ kind: 'client', clientId, issuedBefore, expiresAt });
  }

  /** A revocation asked for by a worker (App.revoke). */
  revoke(record: RevocationRecord): Promise<void> {
    return record.kind === 'token'
      ? this.revokeToken(record.tokenId, record.expiresAt)
      : this.revokeClient(record.clientId, record.issuedBefore, record.expiresAt);
  }

  entries(): RevocationEntries {
    return this.#store.entries();
  }

  /** The list for a worker that said hello; it is registered in the same turn. */
  snapshotFor(worker: Worker): RevocationSnapshot {
    this.#pool.register(worker);
    const { tokens, clients } = this.#store.entries();
    return {
      records: [
        ...tokens.map((t): RevocationRecord => ({ kind: 'token', ...t })),
        ...clients.map((c): RevocationRecord => ({ kind: 'client', ...c })),
      ],
      syncedAtMs: this.#syncedAtMs(),
    };
  }

  /** An entry the store applied on its own (Redis): sent on, not waited for. */
  forward(record: RevocationRecord): void {
    this.#pool.broadcast({ portaria: 'revocation', record });
  }

  async #everyWorker(record: RevocationRecord): Promise<void> {
    // Read after the store's write: a worker registered meanwhile got the entry in its list.
    const workers = this.#pool.registered();
    await Promise.all(
      workers.map(async (worker) => {
        const applied = await this.#pool.ask(
          worker,
          (id) => ({ portaria: 'revocation', record, id }),
          ACK_TIMEOUT_MS,
        );
        if (applied !== true) this.#pool.kill(worker);
      }),
    );
  }
}
