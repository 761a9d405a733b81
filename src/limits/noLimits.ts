/**
 * The limiter when every limit is off: no wait, nothing recorded. Its callers then take
 * the same steps as with limits on (one code path).
 */
import { type Limiter, UNKNOWN_PAIR } from './limiter.js';

export const NO_LIMITS: Limiter = Object.freeze({
  take: () => 0,
  checkBackoff: () => UNKNOWN_PAIR,
  recordFailure: () => undefined,
  recordSuccess: () => undefined,
  close: () => Promise.resolve(),
});
