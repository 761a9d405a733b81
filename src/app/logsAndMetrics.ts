/**
 * The process's loggers and metrics registry as the config sets them. Log lines go to the
 * given destination (tests pass one they read), else pretty (`log.pretty`) or stdout. A
 * worker of a group counts the log writes its primary's output dropped, not its own.
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

export async function openLogsAndMetrics(
  config: Config,
  destination: DestinationStream | undefined,
  logDrops: (() => number) | undefined,
): Promise<LogsAndMetrics> {
  const output = destination ?? (config.log.pretty ? await prettyDestination() : undefined);
  const { logger, access, droppedWrites } = createLoggers(config.log.level, output);
  const metrics = createMetrics({
    maxClientLabels: config.metrics.maxClientLabels,
    processMetricsPrefix: config.metrics.processMetricsPrefix,
  });
  metrics.setLogDropSource(logDrops ?? droppedWrites);
  return { logger, access, metrics };
}
