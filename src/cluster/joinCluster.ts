/**
 * A worker's side of the cluster (`server.workers` > 1), made before its app: the
 * channel to the primary, the revocation list mirrored from the primary, the token
 * limiter answered by the primary (local limits; Redis limits are shared already), the
 * assertion replay store answered by the primary (local store; Redis is shared already),
 * and the log output sent to the primary. `serve` then answers the primary's questions and
 * commands with the app.
 */

import cluster from 'node:cluster';
import { metersRequests } from '../app/quotaWiring.js';
import type { Config } from '../config/types.js';
import { type Clock, systemClock } from '../lib/clock.js';
import type { Limiter } from '../limits/limiter.js';
import type { Meter } from '../limits/meter.js';
import { anyTokenLimit, tokenLimiterSettings } from '../limits/tokenEndpointLimits.js';
import { type AssertionReplayStore, usesReplayStore } from '../oauth/assertionReplayStore.js';
import type { DestinationStream } from '../observability/logger.js';
import { IpcLimiter } from './ipcLimiter.js';
import { IpcLogDestination } from './ipcLogDestination.js';
import { IpcMeter } from './ipcMeter.js';
import { IpcReplayStore } from './ipcReplayStore.js';
import { RevocationMirror } from './revocationMirror.js';
import { WorkerChannel } from './workerChannel.js';

export interface ClusterWorkerParts {
  readonly revocation: RevocationMirror;
  /** Checked per request with the Redis store, as the Redis store's own (revocation.whenStale). */
  readonly revocationFreshness?: { isStale(): boolean };
  /** The limiter to use; undefined: the app makes its own (Redis, or every limit off). */
  readonly limiter?: Limiter;
  /** The primary's replay store (`oauth.replayStore: local`); undefined: made here (Redis). */
  readonly replay?: AssertionReplayStore;
  /** The primary's quota meter (`quotas.store: local`); undefined: made here (Redis, or none). */
  readonly meter?: Meter;
  readonly logDestination: DestinationStream;
  readonly logDrops: () => number;
  /** node:cluster's id of this worker (1, 2, …; a replacement gets the next one). */
  readonly workerId: number;
}

/** What a worker's app offers the primary. */
export interface ServedApp {
  readiness(): unknown;
  metricsSnapshot(): Promise<unknown>;
  reload(): Promise<void>;
  /** The stop-signal path of main.ts: drain, then exit. */
  stop(): void;
}

export interface JoinedCluster {
  readonly parts: ClusterWorkerParts;
  /** Answers the primary's questions with `app`; tells it the worker listens at `publicUrl`. */
  serve(app: ServedApp, publicUrl: string): void;
}

export async function joinCluster(
  config: Config,
  clock: Clock = systemClock,
): Promise<JoinedCluster> {
  const id = cluster.worker?.id;
  if (id === undefined) throw new Error('joinCluster runs in a worker of a group only');
  const channel = new WorkerChannel();
  const revocation = await RevocationMirror.open(
    clock,
    channel,
    config.revocation.maxSyncLagSeconds,
  );
  const limits = config.tokenLimits;
  const log = new IpcLogDestination(channel);
  const parts: ClusterWorkerParts = {
    revocation,
    ...(config.revocation.store === 'redis' ? { revocationFreshness: revocation } : {}),
    ...(anyTokenLimit(limits) && limits.store === 'local'
      ? { limiter: new IpcLimiter(channel, tokenLimiterSettings(limits), clock) }
      : {}),
    ...(usesReplayStore(config) && config.oauth.replayStore === 'local'
      ? { replay: new IpcReplayStore(channel) }
      : {}),
    ...(metersRequests(config) && config.quotas.store === 'local'
      ? { meter: new IpcMeter(channel) }
      : {}),
    logDestination: log as unknown as DestinationStream,
    logDrops: () => log.dropped,
    workerId: id,
  };
  return {
    parts,
    serve(app, publicUrl) {
      channel.on('query', (message) => {
        if (message.what === 'readiness') channel.answer(message.id, app.readiness());
        else
          app.metricsSnapshot().then(
            (value) => channel.answer(message.id, value),
            () => channel.answer(message.id, null),
          );
      });
      channel.on('reload', () => void app.reload());
      channel.on('shutdown', () => app.stop());
      channel.send({ portaria: 'listening', publicUrl });
    },
  };
}
