/**
 * The token operation's abuse controls, as the HTTP layer sees them. Each check answers
 * 0 (go on) or the milliseconds the caller must wait (the route turns that into 429
 * `too-many-requests` with `Retry-After`). A switched-off limit always answers 0.
 *
 * Nothing here waits on a timer: a refusal is answered at once, never by holding the
 * request. Implementations: `LocalTokenLimiter` (this process) and `RedisTokenLimiter`
 * (shared by every replica, falling back to a local limiter while Redis is unusable).
 */

/** Which limit refused a request (a bounded metric label). */
export type LimitReason = 'address' | 'client' | 'backoff';

export type WaitMs = number | Promise<number>;

export interface TokenLimiter {
  /** One request from `address` (before the body is read). */
  takeAddress(address: string): WaitMs;
  /** Whether (client, address) is still waiting after wrong secrets; takes nothing. */
  backoffWait(clientId: string, address: string): WaitMs;
  /** One request naming `clientId`, known or not. */
  takeClient(clientId: string): WaitMs;
  /** A wrong secret (or any refused credentials) for `clientId` from `address`. */
  recordFailure(clientId: string, address: string): void | Promise<void>;
  /** Accepted credentials: the pair starts over. */
  recordSuccess(clientId: string, address: string): void | Promise<void>;
  /** Releases connections (Redis); the local limiter holds none. */
  close(): Promise<void>;
}
