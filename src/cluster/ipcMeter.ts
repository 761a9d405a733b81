/**
 * A worker's quota meter with local counters (`quotas.store: local` in a group): every
 * check, peek and reset is answered by the primary's one `LocalMeter`, which serialises
 * them, so a quota counts the requests of every worker together exactly. A call costs one
 * IPC round trip, on the metered routes only.
 *
 * The policy travels whole and the primary compiles it again (`quotaPolicy`, cached per
 * policy), so the primary needs no quota config and a reload that changes a policy takes
 * effect at once. A call the primary leaves unanswered for `answerWithinMs` (it hangs;
 * if it dies node:cluster ends the workers), or answers with nothing usable, reads
 * `UNAVAILABLE`: the caller applies its policy (fail open or closed), as with Redis. A
 * reset the primary does not confirm throws (an admin call, which reports it).
 */

import type { Clock } from '../lib/clock.js';
import { BoundedMap } from '../limits/boundedMap.js';
import { LocalMeter } from '../limits/localMeter.js';
import type { Meter } from '../limits/meter.js';
import {
  type MeterReading,
  type QuotaPolicy,
  quotaPolicy,
  UNAVAILABLE,
} from '../limits/quotaPolicy.js';
import type { MeterMethod } from './messages.js';
import type { WorkerChannel } from './workerChannel.js';

export const ANSWER_WITHIN_MS = 2000;

export class IpcMeter implements Meter {
  readonly #channel: WorkerChannel;
  readonly #answerWithinMs: number;

  constructor(channel: WorkerChannel, answerWithinMs = ANSWER_WITHIN_MS) {
    this.#channel = channel;
    this.#answerWithinMs = answerWithinMs;
  }

  async check(policy: QuotaPolicy, key: string): Promise<MeterReading> {
    return readingOrUnavailable(await this.#ask('check', policy, key));
  }

  async peek(policy: QuotaPolicy, key: string): Promise<MeterReading> {
    return readingOrUnavailable(await this.#ask('peek', policy, key));
  }

  async reset(policy: QuotaPolicy, key: string): Promise<void> {
    if ((await this.#ask('reset', policy, key)) !== true) {
      throw new Error('quota reset: the primary did not confirm it');
    }
  }

  async close(): Promise<void> {}

  #ask(method: MeterMethod, policy: QuotaPolicy, key: string): Promise<unknown> {
    return this.#channel.ask(
      (id) => ({ portaria: 'quota', id, method, policy, key }),
      this.#answerWithinMs,
    );
  }
}

function readingOrUnavailable(value: unknown): MeterReading {
  return typeof value === 'object' && value !== null && 'allowed' in value
    ? (value as MeterReading)
    : UNAVAILABLE;
}

/**
 * The primary's side: its `LocalMeter` (made on the first call) answers every worker.
 * Policies are compiled once per distinct definition (a bounded cache: a worker cannot
 * grow it beyond `MAX_POLICIES`).
 */
export class PrimaryMeter {
  static readonly MAX_POLICIES = 1000;
  readonly #maxKeys: number;
  readonly #clock: Clock;
  #meter: Meter | null = null;
  readonly #policies = new BoundedMap<QuotaPolicy>(PrimaryMeter.MAX_POLICIES);

  /** `meter` replaces the `LocalMeter` (tests of a failing store). */
  constructor(maxKeys: number, clock: Clock, meter?: Meter) {
    this.#maxKeys = maxKeys;
    this.#clock = clock;
    this.#meter = meter ?? null;
  }

  /**
   * The answer to a worker's call: a reading (`check`, `peek`), true (`reset`), or null
   * for a malformed call or a failing meter (the worker reads it as unavailable). Never
   * rejects.
   */
  answer(method: unknown, policy: unknown, key: unknown): Promise<unknown> {
    return Promise.resolve()
      .then(() => this.#call(method, policy, key))
      .then(
        (value) => value ?? null,
        () => null,
      );
  }

  async close(): Promise<void> {
    await this.#meter?.close();
  }

  /** The group's counters themselves (the primary's admin API reads and resets them). */
  get local(): Meter {
    this.#meter ??= new LocalMeter(this.#maxKeys, this.#clock);
    return this.#meter;
  }

  #call(method: unknown, policy: unknown, key: unknown): unknown {
    if (typeof key !== 'string') return null;
    const compiled = this.#compiled(policy);
    if (compiled === null) return null;
    this.#meter ??= new LocalMeter(this.#maxKeys, this.#clock);
    switch (method) {
      case 'check':
        return this.#meter.check(compiled, key);
      case 'peek':
        return this.#meter.peek(compiled, key);
      case 'reset':
        return Promise.resolve(this.#meter.reset(compiled, key)).then(() => true);
      default:
        return null;
    }
  }

  #compiled(policy: unknown): QuotaPolicy | null {
    if (typeof policy !== 'object' || policy === null) return null;
    const { name, rate, quota } = policy as Partial<QuotaPolicy>;
    if (typeof name !== 'string' || rate === undefined || quota === undefined) return null;
    const definition = JSON.stringify([name, rate, quota]);
    const known = this.#policies.get(definition);
    if (known !== undefined) return known;
    try {
      const compiled = quotaPolicy(
        name,
        rate === null ? null : { ratePerSecond: rate.ratePerSecond, burst: rate.burst },
        quota === null
          ? null
          : { limit: quota.limit, window: quota.window, timeZone: quota.timeZone },
      );
      this.#policies.set(definition, compiled);
      return compiled;
    } catch {
      return null;
    }
  }
}
