/**
 * The limiter when every token limit is off: no wait, nothing recorded. The token
 * operation then takes the same steps as with limits on (one code path).
 */
import { type TokenLimiter, UNKNOWN_PAIR } from './tokenLimiter.js';

export const NO_LIMITS: TokenLimiter = Object.freeze({
  takeAddress: () => 0,
  checkPair: () => UNKNOWN_PAIR,
  takeClient: () => 0,
  recordFailure: () => undefined,
  recordSuccess: () => undefined,
  close: () => Promise.resolve(),
});
