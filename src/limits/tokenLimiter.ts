/**
 * The token operation's abuse controls, as the HTTP layer sees them. Each check answers 0
 * (go on) or the milliseconds the caller must wait (429 with `Retry-After`); nothing waits
 * on a timer. A (client, address) pair that recently got a token is *known* and draws from
 * a bucket that wrong secrets sprayed from other addresses cannot drain. Implementations:
 * `LocalTokenLimiter` and `RedisTokenLimiter`. Known pairs: docs/architecture.md.
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
