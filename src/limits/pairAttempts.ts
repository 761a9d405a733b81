/**
 * One credential check at a time for a (client, address) pair whose last check in this
 * process failed.
 *
 * The back-off is recorded when a wrong secret's check completes, so checks that start
 * together all pass the back-off before the first failure lands: without this, an
 * attacker sending guesses concurrently had every request of its address bucket's burst
 * evaluated after each wait, instead of one. A pair with a recent failure here (within
 * `forgetAfterSeconds`) may therefore have one check in flight; a concurrent one is
 * refused like a backing-off attempt (429, Retry-After 1 s) before its secret is looked
 * at. The check is released only once its outcome is recorded, so the next one sees the
 * new wait. A pair with no failure here is never serialised: a fleet of one partner
 * behind one NAT fetching tokens at the same moment is not slowed.
 *
 * Per process, bounded (`maxTrackedKeys`, least recently used forgotten first), clocked
 * by the injected clock. With N replicas a pair can have N checks in flight.
 */
import type { Clock } from '../lib/clock.js';
import { BoundedMap } from './boundedMap.js';

export type AttemptOutcome = 'failed' | 'succeeded' | 'unchecked';

interface PairState {
  inFlight: number;
  /** Clock time of this process's last failed check; null when the last one succeeded. */
  failedAtMs: number | null;
}

export class PairAttempts {
  readonly #pairs: BoundedMap<PairState>;
  readonly #forgetAfterMs: number;
  readonly #clock: Clock;

  constructor(maxTrackedKeys: number, forgetAfterSeconds: number, clock: Clock) {
    this.#pairs = new BoundedMap(maxTrackedKeys);
    this.#forgetAfterMs = forgetAfterSeconds * 1000;
    this.#clock = clock;
  }

  /** Starts a check of `pair`; false (start nothing) when it must wait for the one in flight. */
  begin(pair: string): boolean {
    const state = this.#pairs.get(pair);
    if (state === undefined) {
      this.#pairs.set(pair, { inFlight: 1, failedAtMs: null });
      return true;
    }
    if (state.inFlight > 0 && this.#failedLately(state)) return false;
    state.inFlight++;
    return true;
  }

  /** Ends a check `begin` started; `unchecked`: refused before its secret was looked at. */
  end(pair: string, outcome: AttemptOutcome): void {
    const state = this.#pairs.get(pair);
    if (state === undefined) return; // forgotten meanwhile (bounded map)
    state.inFlight = Math.max(0, state.inFlight - 1);
    if (outcome === 'failed') state.failedAtMs = this.#clock.now();
    else if (outcome === 'succeeded') state.failedAtMs = null;
    if (state.inFlight === 0 && !this.#failedLately(state)) this.#pairs.delete(pair);
  }

  #failedLately(state: PairState): boolean {
    return state.failedAtMs !== null && this.#clock.now() - state.failedAtMs < this.#forgetAfterMs;
  }
}
