/**
 * The timers of a remote key set: a one-shot timer that tests can replace, and the
 * jittered exponential back-off between failed fetches (jitter spreads the replicas'
 * retries after an issuer outage).
 */

/** Arms a one-shot timer and returns its cancel function (injectable for tests). */
export type SetTimer = (callback: () => void, delayMs: number) => () => void;

/** Node's limit: a longer delay would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const realTimer: SetTimer = (callback, delayMs) => {
  const timer = setTimeout(callback, Math.min(delayMs, MAX_TIMER_MS));
  timer.unref();
  return () => clearTimeout(timer);
};

/** Jittered exponential backoff: min(max, base × 2^attempt) × (0.5 + random/2). */
export function backoffDelayMs(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number,
): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30)) * (0.5 + random() / 2);
}
