/**
 * The primary process of a group (`server.workers` > 1; docs/workers.md). It answers no
 * public request: it owns what must be one per group and forks the workers that serve.
 *
 *   admin listener  /healthz, /readyz (primaryReadiness.ts), /metrics (its own metrics
 *                   and every worker's, merged), the revocation API
 *   revocations     the configured store, opened here only; every entry sent to every
 *                   worker, and an admin revocation answered once all applied it
 *                   (revocationFanout.ts)
 *   token limits    with `tokenLimits.store: local`, the one limiter every worker asks
 *   quota meter     with local quota counters, the one meter every worker asks
 *                   (ipcMeter.ts; made on the first call)
 *   replay store    with `oauth.replayStore: local`, the one store of used client
 *                   assertion `jti`s every worker asks
 *   log output      the one writer: workers send their lines here (ipcLogDestination.ts)
 *   workers         forked, replaced when they die (workerPool.ts), told to reload on
 *                   SIGHUP and to drain on SIGTERM; the primary exits after the last one
 */

import type { Worker } from 'node:cluster';
import { createAdminServer } from '../app/adminServer.js';
import { metersRequests, openMeter, quotaAdminOfConfig } from '../app/quotaWiring.js';
import { openRevocationStore } from '../app/revocationStores.js';
import { listenOn, urlOf } from '../app/servers.js';
import { allOrEveryProblem, checkRevocationFile } from '../app/startupChecks.js';
import { readAdminToken } from '../config/adminTokenFile.js';
import type { Config } from '../config/types.js';
import { systemClock } from '../lib/clock.js';
import { GROUP_NONCE_SECRET_ENV, newGroupSecret } from '../lib/groupSecret.js';
import type { Limiter } from '../limits/limiter.js';
import { LocalLimiter } from '../limits/localLimiter.js';
import {
  anyTokenLimit,
  familiesByName,
  tokenLimiterSettings,
  tokenLimitFamilies,
} from '../limits/tokenEndpointLimits.js';
import { usesReplayStore } from '../oauth/assertionReplayStore.js';
import { localReplayStore } from '../oauth/localReplayStore.js';
import { aggregateExposition, createClusterMetrics } from '../observability/clusterMetrics.js';
import {
  createLoggers,
  type DestinationStream,
  type Logger,
  outputDestination,
  prettyDestination,
} from '../observability/logger.js';
import { createMetrics, type MetricsSnapshot } from '../observability/metrics.js';
import type { RevocationRecord } from '../revocation/revocationLogRecord.js';
import { answerLimiterCall } from './ipcLimiter.js';
import { PrimaryMeter } from './ipcMeter.js';
import { answerClaim } from './ipcReplayStore.js';
import type { WorkerMessage } from './messages.js';
import { primaryReadiness } from './primaryReadiness.js';
import { RevocationFanout } from './revocationFanout.js';
import { WorkerPool } from './workerPool.js';

/** How long the primary waits for a worker's metrics when Prometheus scrapes. */
const METRICS_ANSWER_MS = 2000;

export interface Primary {
  readonly logger: Logger;
  /** Tells every worker to reload (SIGHUP). */
  reload(): void;
  /** Drains every worker, then closes the admin listener and the store (idempotent). */
  shutdown(): Promise<void>;
}

/** What every worker must share and cannot read from the configuration: a random DPoP nonce secret. */
function groupSecrets(config: Config): Record<string, string> {
  const { enabled, nonces } = config.dpop;
  if (!enabled || !nonces.enabled || nonces.secretFile !== null) return {};
  return { [GROUP_NONCE_SECRET_ENV]: newGroupSecret() };
}

export interface PrimaryOptions {
  /** The configuration file read again (absent without a file): the admin quota API's view. */
  readonly reread?: () => Promise<Config>;
}

export async function startPrimary(
  config: Config,
  workers: number,
  options: PrimaryOptions = {},
): Promise<Primary> {
  const clock = systemClock;
  const output: DestinationStream = config.log.pretty
    ? await prettyDestination()
    : outputDestination();
  const { logger, droppedWrites } = createLoggers(config.log.level, output);
  const metrics = createMetrics({
    maxClientLabels: config.metrics.maxClientLabels,
    processMetricsPrefix: config.metrics.processMetricsPrefix,
  });
  metrics.setLogDropSource(droppedWrites);
  const groupMetrics = createClusterMetrics();

  const [adminToken] = await allOrEveryProblem([
    readAdminToken(config.admin.tokenFile),
    checkRevocationFile(config),
  ] as const);
  let forward: (record: RevocationRecord) => void = () => {};
  const { revocation, redis } = await openRevocationStore(config, clock, logger, metrics, (r) =>
    forward(r),
  );
  const limits = config.tokenLimits;
  const limiter: Limiter | null =
    limits.store === 'local' && anyTokenLimit(limits)
      ? new LocalLimiter(tokenLimiterSettings(limits), clock)
      : null;
  // The workers' families, built from the same config: a call names its family.
  const families = familiesByName(tokenLimitFamilies(limits));

  // Policies travel with each call (ipcMeter.ts): the meter needs no quota config.
  const quotas = new PrimaryMeter(config.quotas.maxTrackedKeys, clock);
  // The admin quota API's meter: the group's counters, or a Redis connection of its own.
  const adminMeter = !metersRequests(config)
    ? null
    : config.quotas.store === 'local'
      ? quotas.local
      : await openMeter(config, { clock, logger, metrics });

  const replay =
    usesReplayStore(config) && config.oauth.replayStore === 'local'
      ? localReplayStore(config, clock, logger)
      : null;

  let draining = false;
  const syncedAtMs = (): number | null => {
    if (redis === null) return clock.now();
    const age = redis.state().syncAgeSeconds;
    return age === null ? null : clock.now() - age * 1000;
  };
  const pool: WorkerPool = new WorkerPool(
    workers,
    {
      message: (worker, message) => onMessage(worker, message),
      started: (workerId, pid) => logger.info({ worker: workerId, pid }, 'worker started'),
      replaced: (exit, delayMs) => {
        groupMetrics.workerReplaced(exit.signal === null ? 'exit' : 'signal');
        logger.error(
          { worker: exit.workerId, pid: exit.pid, code: exit.code, signal: exit.signal, delayMs },
          'worker exited unexpectedly: starting a replacement',
        );
      },
    },
    groupSecrets(config),
  );
  groupMetrics.setWorkerSource(() => ({ configured: pool.size, listening: pool.listening }));
  const fanout = new RevocationFanout(revocation, pool, syncedAtMs);
  forward = (record) => fanout.forward(record);

  const answer = (worker: Worker, id: number, value: unknown) =>
    pool.send(worker, { portaria: 'answer', id, value });
  function onMessage(worker: Worker, message: WorkerMessage): void {
    switch (message.portaria) {
      case 'hello':
        answer(worker, message.id, fanout.snapshotFor(worker));
        return;
      case 'log':
        if (message.chunk !== '') output.write(message.chunk);
        return;
      case 'limit':
        void answerLimiterCall(limiter, families, message.method, message.args).then((value) =>
          answer(worker, message.id, value),
        );
        return;
      case 'quota':
        void quotas
          .answer(message.method, message.policy, message.key)
          .then((value) => answer(worker, message.id, value));
        return;
      case 'replay':
        void answerClaim(replay, message.clientId, message.jti, message.untilMs).then((value) =>
          answer(worker, message.id, value),
        );
        return;
      case 'revoke':
        void fanout.revoke(message.record).then(
          () => answer(worker, message.id, true),
          () => answer(worker, message.id, false),
        );
        return;
      default:
        return;
    }
  }

  const adminServer = createAdminServer(config, {
    metricsText: async () => {
      const asked = pool
        .listeningWorkers()
        .map((worker) =>
          pool.ask(worker, (id) => ({ portaria: 'query', id, what: 'metrics' }), METRICS_ANSWER_MS),
        );
      const snapshots = [await metrics.snapshot(), await groupMetrics.snapshot()];
      for (const snapshot of await Promise.all(asked)) {
        if (Array.isArray(snapshot)) snapshots.push(snapshot as MetricsSnapshot);
      }
      return aggregateExposition(snapshots);
    },
    ready: primaryReadiness(pool, () => draining, redis),
    store: fanout,
    adminToken,
    clock,
    metrics,
    logger,
    // The policies and routes the workers reload, read again from the file.
    quotas:
      adminMeter === null ? undefined : quotaAdminOfConfig(config, adminMeter, options.reread),
  });
  const closeStores = async () => {
    await revocation.close();
    await limiter?.close();
    await quotas.close();
    if (config.quotas.store === 'redis') await adminMeter?.close();
    await replay?.close();
  };
  try {
    await listenOn(adminServer, config.admin.host, config.admin.port, 'admin');
  } catch (error) {
    await closeStores();
    throw error;
  }
  const sweep = setInterval(() => void revocation.sweep(), 60_000);
  sweep.unref();
  // The Redis list's freshness, for each worker's revocation.whenStale policy.
  const sync =
    redis === null
      ? null
      : setInterval(
          () => pool.broadcast({ portaria: 'revocation-sync', syncedAtMs: syncedAtMs() }),
          1000,
        );
  sync?.unref();

  let publicUrl: string;
  try {
    publicUrl = await pool.start();
  } catch (error) {
    logger.error({ reason: (error as Error).message }, 'a worker failed to start: stopping');
    await pool.stop(1000);
    adminServer.close();
    adminServer.closeAllConnections();
    await closeStores();
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    throw error;
  }
  const adminUrl = urlOf(adminServer);
  logger.info({ publicUrl, adminUrl, workers }, 'listening');
  if (config.revocation.store === 'memory') {
    logger.warn(
      { setting: 'revocation.store' },
      'revocations are kept in memory only: a restart forgets them and other replicas never see them (use local or redis outside tests)',
    );
  }

  let stopping: Promise<void> | undefined;
  const drain = async () => {
    draining = true;
    logger.info({ graceMs: config.server.shutdownGraceMs, workers }, 'shutting down: draining');
    // Each worker drains within the grace; one that hangs beyond it (and a margin for its
    // own shutdown steps) is killed.
    await pool.stop(config.server.shutdownGraceMs + 5000);
    clearInterval(sweep);
    if (sync !== null) clearInterval(sync);
    const adminClosed = new Promise<void>((resolve) => adminServer.close(() => resolve()));
    adminServer.closeIdleConnections();
    const adminGrace = setTimeout(() => adminServer.closeAllConnections(), 1000);
    await adminClosed;
    clearTimeout(adminGrace);
    await closeStores();
    logger.info('stopped');
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
  };
  return {
    logger,
    reload() {
      pool.broadcast({ portaria: 'reload' });
    },
    shutdown() {
      stopping ??= drain();
      return stopping;
    },
  };
}
