/**
 * What every revocation store offers. `isRevoked` runs on every protected request,
 * cached token or not, so it is synchronous and O(1): stores keep the list in memory
 * and persist or propagate it on the side (the durable and Redis stores come later).
 *
 * Entries cover a token by id (`jti`) or every token of a client issued before a
 * moment. They expire when the tokens they cover can no longer be valid.
 */
export interface RevocationStore {
  /** True when the token is revoked by id or by its client's cut-off. */
  isRevoked(token: {
    readonly tokenId: string;
    readonly clientId: string;
    readonly issuedAt: number;
  }): boolean;
  /**
   * The client's revocation cut-off (seconds: its tokens issued at or before it are
   * revoked), or undefined when none is held.
   */
  clientCutoff(clientId: string): number | undefined;
  /** Revokes one token; `expiresAt` (seconds) is when the entry may be forgotten. */
  revokeToken(tokenId: string, expiresAt: number): Promise<void>;
  /** Revokes every token of `clientId` issued at or before `issuedBefore` (seconds). */
  revokeClient(clientId: string, issuedBefore: number, expiresAt: number): Promise<void>;
  /** Number of entries held (for metrics). */
  size(): number;
  /** Forgets entries whose tokens can no longer be valid (the app runs it every minute). */
  sweep(): void | Promise<void>;
  /** Every entry not yet expired (for the admin API), times in seconds. */
  entries(): RevocationEntries;
  close(): Promise<void>;
}

export interface RevocationEntries {
  readonly tokens: readonly { readonly tokenId: string; readonly expiresAt: number }[];
  readonly clients: readonly {
    readonly clientId: string;
    readonly issuedBefore: number;
    readonly expiresAt: number;
  }[];
}
