/**
 * In-memory revocation list. On its own (`revocation.store: memory`) it is not durable: a
 * restart forgets it. The durable local store and the Redis store hold their in-memory
 * copy in one of these.
 *
 * Expired entries are dropped lazily on lookup and by `sweep()`, which the app runs on
 * a timer, so the maps stay bounded by the revocations made within one token lifetime.
 */
import { type Clock, epochSeconds } from '../lib/clock.js';
import type { RevocationRecord } from './revocationLogRecord.js';
import type { RevocationEntries, RevocationStore } from './revocationStore.js';

export class MemoryRevocationStore implements RevocationStore {
  readonly #clock: Clock;
  /** jti → expiry (seconds). */
  readonly #tokens = new Map<string, number>();
  /** clientId → { cut-off, expiry } (seconds). */
  readonly #clients = new Map<string, { issuedBefore: number; expiresAt: number }>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  isRevoked(token: { tokenId: string; clientId: string; issuedAt: number }): boolean {
    if (this.#tokens.size > 0 && this.#tokens.has(token.tokenId)) return true;
    if (this.#clients.size === 0) return false;
    const cut = this.#clients.get(token.clientId);
    // Cut-offs are whole seconds (an RFC 3339 cut-off is rounded down); a partner's `iat`
    // may carry a fraction: compared by its second, so `iat` 20.5 falls under a cut-off
    // given as …:20.9 (stricter by under a second, never laxer).
    return cut !== undefined && Math.floor(token.issuedAt) <= cut.issuedBefore;
  }

  clientCutoff(clientId: string): number | undefined {
    return this.#clients.size === 0 ? undefined : this.#clients.get(clientId)?.issuedBefore;
  }

  async revokeToken(tokenId: string, expiresAt: number): Promise<void> {
    this.apply({ kind: 'token', tokenId, expiresAt });
  }

  async revokeClient(clientId: string, issuedBefore: number, expiresAt: number): Promise<void> {
    this.apply({ kind: 'client', clientId, issuedBefore, expiresAt });
  }

  /**
   * Merges one entry in, synchronously: an entry only gets stricter (the later cut-off and
   * expiry win). The durable and Redis stores keep their in-memory list in this class.
   */
  apply(record: RevocationRecord): void {
    if (record.kind === 'token') {
      const current = this.#tokens.get(record.tokenId) ?? record.expiresAt;
      this.#tokens.set(record.tokenId, Math.max(current, record.expiresAt));
      return;
    }
    const current = this.#clients.get(record.clientId);
    this.#clients.set(record.clientId, {
      issuedBefore: Math.max(current?.issuedBefore ?? record.issuedBefore, record.issuedBefore),
      expiresAt: Math.max(current?.expiresAt ?? record.expiresAt, record.expiresAt),
    });
  }

  /** Forgets entries whose tokens can no longer be valid. */
  sweep(): void {
    const now = epochSeconds(this.#clock);
    for (const [id, expiresAt] of this.#tokens) if (expiresAt < now) this.#tokens.delete(id);
    for (const [id, cut] of this.#clients) if (cut.expiresAt < now) this.#clients.delete(id);
  }

  size(): number {
    return this.#tokens.size + this.#clients.size;
  }

  entries(): RevocationEntries {
    const now = epochSeconds(this.#clock);
    return {
      tokens: [...this.#tokens]
        .filter(([, expiresAt]) => expiresAt >= now)
        .map(([tokenId, expiresAt]) => ({ tokenId, expiresAt })),
      clients: [...this.#clients]
        .filter(([, cut]) => cut.expiresAt >= now)
        .map(([clientId, cut]) => ({ clientId, ...cut })),
    };
  }

  async close(): Promise<void> {}
}
