/**
 * A worker's limiter with local limits (`tokenLimits.store: local`): every take, check
 * and record is answered by the primary's one `LocalLimiter`, so the buckets and the
 * back-off count the requests of every worker together (docs/workers.md). A call costs
 * one IPC round trip (tens of microseconds), on the limited routes only.
 *
 * A family travels by name: the primary resolves it among the families it built from the
 * same config (`answerLimiterCall`); a name it does not know, or malformed arguments, is
 * answered "no wait, unknown pair" and never throws there. The primary answers unless it
 * hangs (if it dies, node:cluster ends the workers): a call it leaves unanswered for
 * `FALLBACK_AFTER_MS` is answered by a limiter of this worker alone, as the Redis limiter
 * falls back when Redis is down.
 */
import type { Clock } from '../lib/clock.js';
import {
  type BucketFamily,
  type Limiter,
  type LimiterSettings,
  type PairCheck,
  UNKNOWN_PAIR,
} from '../limits/limiter.js';
import { LocalLimiter } from '../limits/localLimiter.js';
import type { LimiterMethod } from './messages.js';
import type { WorkerChannel } from './workerChannel.js';

const FALLBACK_AFTER_MS = 2000;

export class IpcLimiter implements Limiter {
  readonly #channel: WorkerChannel;
  readonly #local: LocalLimiter;

  constructor(channel: WorkerChannel, settings: LimiterSettings, clock: Clock) {
    this.#channel = channel;
    this.#local = new LocalLimiter(settings, clock);
  }

  async take(family: BucketFamily, key: string): Promise<number> {
    const value = await this.#ask('take', family.name, key);
    return value === undefined ? this.#local.take(family, key) : (value as number);
  }

  async checkBackoff(subject: string, address: string): Promise<PairCheck> {
    const value = await this.#ask('checkBackoff', subject, address);
    return value === undefined ? this.#local.checkBackoff(subject, address) : (value as PairCheck);
  }

  async recordFailure(subject: string, address: string): Promise<void> {
    const value = await this.#ask('recordFailure', subject, address);
    if (value === undefined) this.#local.recordFailure(subject, address);
  }

  async recordSuccess(subject: string, address: string): Promise<void> {
    const value = await this.#ask('recordSuccess', subject, address);
    if (value === undefined) this.#local.recordSuccess(subject, address);
  }

  async close(): Promise<void> {}

  /** The primary's answer, or undefined when it gave none in time. */
  #ask(method: LimiterMethod, first: string, second: string): Promise<unknown> {
    return this.#channel.ask(
      (id) => ({ portaria: 'limit', id, method, args: [first, second] }),
      FALLBACK_AFTER_MS,
    );
  }
}

/**
 * The primary's answer to a worker's call: its limiter's (null for a record), "no wait,
 * unknown pair" without a limiter or for an unknown family, or undefined when the limiter
 * failed (the worker then answers locally). Never rejects.
 */
export function answerLimiterCall(
  limiter: Limiter | null,
  families: ReadonlyMap<string, BucketFamily>,
  method: LimiterMethod,
  args: readonly unknown[],
): Promise<unknown> {
  return Promise.resolve()
    .then(() => call(limiter, families, method, args))
    .then(
      (value) => value ?? null,
      () => undefined,
    );
}

function call(
  limiter: Limiter | null,
  families: ReadonlyMap<string, BucketFamily>,
  method: LimiterMethod,
  args: readonly unknown[],
): unknown {
  const [first, second] = args;
  if (limiter === null || typeof first !== 'string' || typeof second !== 'string') {
    return unlimited(method);
  }
  switch (method) {
    case 'take': {
      const family = families.get(first);
      return family === undefined ? 0 : limiter.take(family, second);
    }
    case 'checkBackoff':
      return limiter.checkBackoff(first, second);
    case 'recordFailure':
      return limiter.recordFailure(first, second);
    case 'recordSuccess':
      return limiter.recordSuccess(first, second);
    default:
      return unlimited(method);
  }
}

function unlimited(method: LimiterMethod): unknown {
  if (method === 'take') return 0;
  return method === 'checkBackoff' ? UNKNOWN_PAIR : null;
}
