/**
 * The process's loggers and metrics registry as the config sets them. Log lines go to the
 * given destination (tests pass one they read), else pretty (`log.pretty`) or stdout. A
 * worker of a group counts the log writes its primary's output dropped, not its own, and
 * names itself in every line (`worker`: the primary writes every worker's lines).
 */
import type { Config } from '../config/types.js';
import {
  type AccessLog,
  createLoggers,
  type DestinationStream,
  type Logger,
  prettyDestination,
} from '../observability/logger.js';
import { createMetrics, type Metrics } from '../observability/metrics.js';

export interface LogsAndMetrics {
  readonly logger: Logger;
  readonly access: AccessLog;
  readonly metrics: Metrics;
}

/** A worker of a group: its cluster id and its primary's dropped log writes. */
export interface WorkerLogging {
  readonly workerId: number;
  readonly logDrops: () => number;
}

export async function openLogsAndMetrics(
  config: Config,
  destination: DestinationStream | undefined,
  worker: WorkerLogging | undefined,
): Promise<LogsAndMetrics> {
  const output = destination ?? (config.log.pretty ? await prettyDestination() : undefined);
  const { logger, access, droppedWrites } = createLoggers(
    config.log.level,
    output,
    worker === undefined ? {} : { worker: worker.workerId },
  );
  const metrics = createMetrics({
    maxClientLabels: config.metrics.maxClientLabels,
    processMetricsPrefix: config.metrics.processMetricsPrefix,
  });
  metrics.setLogDropSource(worker?.logDrops ?? droppedWrites);
  return { logger, access, metrics };
}
