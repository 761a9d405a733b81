/**
 * A worker's assertion replay store with `oauth.replayStore: local`: every claim is
 * answered by the primary's one `LocalReplayStore`, so a `jti` is single use across the
 * whole group, as in one process (docs/workers.md). A claim costs one IPC round trip, on
 * `private_key_jwt` authentications only.
 *
 * Fails closed: a claim the primary cannot answer (its store is full, or it leaves the
 * question unanswered for `NO_ANSWER_AFTER_MS`) is a 503, never "not seen" — a worker's
 * own answer would accept the assertion once per worker.
 */
import {
  type AssertionReplayStore,
  replayStoreUnavailable,
} from '../oauth/assertionReplayStore.js';
import type { WorkerChannel } from './workerChannel.js';

const NO_ANSWER_AFTER_MS = 2000;

export class IpcReplayStore implements AssertionReplayStore {
  readonly #channel: WorkerChannel;

  constructor(channel: WorkerChannel) {
    this.#channel = channel;
  }

  async claim(clientId: string, jti: string, untilMs: number): Promise<boolean> {
    const value = await this.#channel.ask(
      (id) => ({ portaria: 'replay', id, clientId, jti, untilMs }),
      NO_ANSWER_AFTER_MS,
    );
    if (typeof value !== 'boolean') throw replayStoreUnavailable();
    return value;
  }

  async close(): Promise<void> {}
}

/** The primary's answer to a claim: the store's verdict, or null when it cannot tell. */
export function answerClaim(
  store: AssertionReplayStore | null,
  clientId: string,
  jti: string,
  untilMs: number,
): Promise<boolean | null> {
  if (store === null) return Promise.resolve(null);
  return Promise.resolve()
    .then(() => store.claim(clientId, jti, untilMs))
    .catch(() => null);
}
