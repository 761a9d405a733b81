/**
 * `/metrics` of a group of processes (`server.workers` > 1): the primary's own metrics
 * and the workers' (each `Metrics.snapshot()`, fetched over IPC when Prometheus scrapes)
 * merged by prom-client's cluster aggregation: counters and histograms summed, each gauge
 * (and the reload counter) by its `aggregator` (metrics.ts). Plus the group's own
 * series: workers configured and listening, and workers replaced after an unexpected exit.
 */
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client';
import type { MetricsSnapshot } from './metrics.js';

export interface ClusterMetrics {
  /** A worker exited unexpectedly and is being replaced (`cause`: exit code or signal). */
  workerReplaced(cause: 'exit' | 'signal'): void;
  setWorkerSource(read: () => { configured: number; listening: number }): void;
  snapshot(): Promise<MetricsSnapshot>;
}

export function createClusterMetrics(): ClusterMetrics {
  const registry = new Registry();
  const registers = [registry];
  let read = () => ({ configured: 0, listening: 0 });
  new Gauge({
    name: 'portaria_workers',
    help: 'Worker processes: configured (server.workers) and listening now.',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const { configured, listening } = read();
      this.set({ state: 'configured' }, configured);
      this.set({ state: 'listening' }, listening);
    },
  });
  const replaced = new Counter({
    name: 'portaria_worker_restarts_total',
    help: 'Worker processes that exited unexpectedly and were replaced, by cause (exit, signal).',
    labelNames: ['cause'] as const,
    registers,
  });
  for (const cause of ['exit', 'signal'] as const) replaced.inc({ cause }, 0);
  return {
    workerReplaced(cause) {
      replaced.inc({ cause });
    },
    setWorkerSource(source) {
      read = source;
    },
    async snapshot() {
      return registry.getMetricsAsJSON();
    },
  };
}

/** The Prometheus text of several processes' snapshots merged. */
export async function aggregateExposition(
  snapshots: readonly MetricsSnapshot[],
): Promise<{ contentType: string; text: string }> {
  const registry = AggregatorRegistry.aggregate([...snapshots]);
  return { contentType: registry.contentType, text: await registry.metrics() };
}
