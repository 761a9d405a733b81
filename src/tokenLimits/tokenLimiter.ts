/**
 * The token operation's abuse controls, as the HTTP layer sees them. Each check answers
 * 0 (go on) or the milliseconds the caller must wait (the route turns that into 429
 * `too-many-requests` with `Retry-After`). A switched-off limit always answers 0.
 *
 * Known pairs. A (client, address) pair that got a token within `KNOWN_PAIR_MS` is
 * *known*: the address proved it holds the client's secret. Its requests draw from the
 * client's second bucket (same rate and burst), which only known pairs reach, so wrong
 * secrets sprayed at a client from addresses it never used drain only the bucket of
 * unknown addresses and cannot lock the client out of its own addresses. Knowing a pair
 * never shortens its own back-off. The window is twice the longest token lifetime
 * (24 h), so a client that fetches a token at least daily from an address stays known
 * there; a mark is created only by accepted credentials, so nobody without a secret can
 * make the limiter hold one.
 *
 * Nothing here waits on a timer: a refusal is answered at once, never by holding the
 * request. Implementations: `LocalTokenLimiter` (this process) and `RedisTokenLimiter`
 * (shared by every replica, falling back to a local limiter while Redis is unusable).
 */

/** Which limit refused a request (a bounded metric label). */
export type LimitReason = 'address' | 'client' | 'backoff';

export type WaitMs = number | Promise<number>;

/** How long a pair stays known after its last accepted credentials. */
export const KNOWN_PAIR_MS = 48 * 3600 * 1000;

export interface PairCheck {
  /** Milliseconds the pair must still wait after wrong secrets (0: none). */
  readonly waitMs: number;
  /** The pair got a token within `KNOWN_PAIR_MS`. */
  readonly known: boolean;
}

export const UNKNOWN_PAIR: PairCheck = Object.freeze({ waitMs: 0, known: false });

export interface TokenLimiter {
  /** One request from `address` (before the body is read). */
  takeAddress(address: string): WaitMs;
  /** Whether (client, address) is still waiting after wrong secrets, and whether it is known; takes nothing. */
  checkPair(clientId: string, address: string): PairCheck | Promise<PairCheck>;
  /** One request naming `clientId`, known or not, from a known pair (`known`) or not. */
  takeClient(clientId: string, known: boolean): WaitMs;
  /** A wrong secret (or any refused credentials) for `clientId` from `address`. */
  recordFailure(clientId: string, address: string): void | Promise<void>;
  /** Accepted credentials: the pair's failures are forgotten and it is known. */
  recordSuccess(clientId: string, address: string): void | Promise<void>;
  /** Releases connections (Redis); the local limiter holds none. */
  close(): Promise<void>;
}
