/**
 * The clock every time-dependent rule reads. Production uses the system clock;
 * tests inject a `ManualClock` and move it instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export class ManualClock implements Clock {
  #now: number;
  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.#now = startMs;
  }
  now(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  set(ms: number): void {
    this.#now = ms;
  }
}

/** Whole seconds since the epoch, as JWT `NumericDate` claims use (RFC 7519 §2). */
export function epochSeconds(clock: Clock): number {
  return Math.floor(clock.now() / 1000);
}
