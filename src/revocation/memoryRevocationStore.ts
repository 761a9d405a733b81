/**
 * In-memory revocation list for a single process. Not durable: a restart forgets it
 * (the durable local store replaces it as the default in a later change).
 *
 * Expired entries are dropped lazily on lookup and by `sweep()`, which the app runs on
 * a timer, so the maps stay bounded by the revocations made within one token lifetime.
 */
import { type Clock, epochSeconds } from '../lib/clock.js';
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
    return cut !== undefined && token.issuedAt <= cut.issuedBefore;
  }

  async revokeToken(tokenId: string, expiresAt: number): Promise<void> {
    const current = this.#tokens.get(tokenId) ?? 0;
    this.#tokens.set(tokenId, Math.max(current, expiresAt));
  }

  async revokeClient(clientId: string, issuedBefore: number, expiresAt: number): Promise<void> {
    const current = this.#clients.get(clientId);
    this.#clients.set(clientId, {
      issuedBefore: Math.max(current?.issuedBefore ?? 0, issuedBefore),
      expiresAt: Math.max(current?.expiresAt ?? 0, expiresAt),
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
