/**
 * /readyz of a group (`server.workers` > 1), answered by the primary's admin listener:
 * not ready while draining, while the Redis revocation list has not been loaded once,
 * while fewer workers than configured listen (starting, or one being replaced), or while
 * a worker is not ready by its own policy (app/readiness.ts: no active signing key, an
 * issuer without a usable key set yet) or does not answer within a second. `degraded`
 * (ready, with something to report) names every distinct reason: the Redis list's and
 * each worker's (e.g. a worker's client-assertion replay store without its Redis).
 */
import type { Worker } from 'node:cluster';
import type { Readiness } from '../app/readiness.js';
import { revocationDegraded } from '../app/readiness.js';
import type { RedisRevocationStore } from '../revocation/redisRevocationStore.js';
import type { WorkerPool } from './workerPool.js';

const WORKER_ANSWER_MS = 1000;
const DEGRADED_SEPARATOR = '; ';

export function primaryReadiness(
  pool: WorkerPool,
  draining: () => boolean,
  redis: RedisRevocationStore | null,
): () => Promise<Readiness> {
  return async () => {
    if (draining()) return { ready: false, reason: 'shutting down' };
    const redisState = redis?.state();
    if (redisState !== undefined && !redisState.loaded) {
      return { ready: false, reason: 'the revocation list has not been loaded from Redis yet' };
    }
    if (pool.listening < pool.size) {
      return { ready: false, reason: `${pool.listening} of ${pool.size} workers listening` };
    }
    const answers = await Promise.all(
      pool
        .listeningWorkers()
        .map((worker: Worker) =>
          pool.ask(
            worker,
            (id) => ({ portaria: 'query', id, what: 'readiness' }),
            WORKER_ANSWER_MS,
          ),
        ),
    );
    const reasons = new Set<string>();
    const listDegraded = redisState === undefined ? undefined : revocationDegraded(redisState);
    if (listDegraded !== undefined) reasons.add(listDegraded);
    for (const answer of answers as (Readiness | undefined)[]) {
      if (answer === undefined) return { ready: false, reason: 'a worker did not answer' };
      if (!answer.ready) return answer;
      // A worker joins its own reasons with `; ` (app/readiness.ts); each is named once.
      for (const reason of answer.degraded?.split(DEGRADED_SEPARATOR) ?? []) reasons.add(reason);
    }
    return reasons.size === 0
      ? { ready: true }
      : { ready: true, degraded: [...reasons].join(DEGRADED_SEPARATOR) };
  };
}
