/**
 * A worker's token limiter with `tokenLimits.store: local`: every check and record is
 * answered by the primary's one `LocalTokenLimiter`, so the buckets and the failed-secret
 * back-off count the requests of every worker together (docs/workers.md). A call costs
 * one IPC round trip (tens of microseconds) on the token operation only.
 *
 * The primary answers unless it hangs (if it dies, node:cluster ends the workers): a
 * call it leaves unanswered for `FALLBACK_AFTER_MS` is answered by a limiter of this
 * worker alone, as the Redis limiter falls back when Redis is down.
 */
import type { TokenLimitsConfig } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { LocalTokenLimiter } from '../limits/localTokenLimiter.js';
import type { PairCheck, TokenLimiter } from '../limits/tokenLimiter.js';
import type { LimiterMethod } from './messages.js';
import type { WorkerChannel } from './workerChannel.js';

const FALLBACK_AFTER_MS = 2000;

export class IpcTokenLimiter implements TokenLimiter {
  readonly #channel: WorkerChannel;
  readonly #local: LocalTokenLimiter;

  constructor(channel: WorkerChannel, config: TokenLimitsConfig, clock: Clock) {
    this.#channel = channel;
    this.#local = new LocalTokenLimiter(config, clock);
  }

  takeAddress(address: string): Promise<number> {
    return this.#call('takeAddress', [address], () => this.#local.takeAddress(address));
  }

  checkPair(clientId: string, address: string): Promise<PairCheck> {
    return this.#call('checkPair', [clientId, address], () =>
      this.#local.checkPair(clientId, address),
    );
  }

  takeClient(clientId: string, known: boolean): Promise<number> {
    return this.#call('takeClient', [clientId, known], () =>
      this.#local.takeClient(clientId, known),
    );
  }

  async recordFailure(clientId: string, address: string): Promise<void> {
    await this.#call('recordFailure', [clientId, address], () =>
      this.#local.recordFailure(clientId, address),
    );
  }

  async recordSuccess(clientId: string, address: string): Promise<void> {
    await this.#call('recordSuccess', [clientId, address], () =>
      this.#local.recordSuccess(clientId, address),
    );
  }

  async close(): Promise<void> {}

  async #call<T>(
    method: LimiterMethod,
    args: readonly (string | boolean)[],
    fallback: () => T,
  ): Promise<T> {
    const value = await this.#channel.ask(
      (id) => ({ portaria: 'limit', id, method, args }),
      FALLBACK_AFTER_MS,
    );
    return value === undefined ? fallback() : (value as T);
  }
}
