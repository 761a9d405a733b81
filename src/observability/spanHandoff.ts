/**
 * The serving thread's side of the span export: finished span records are gathered and
 * posted to the export thread (`traceExportWorker.ts`) in batches — every
 * `FLUSH_DELAY_MS`, or at once when `FLUSH_AT` are waiting — so that the SDK's code runs
 * there, many spans at a time, instead of cold on one request in a hundred here.
 *
 * Bounded: at most `maxWaiting` records are here or on their way to the thread (posted,
 * not yet taken); past that, spans are dropped — the thread is behind, as when every
 * request is recorded at a rate its CPU cannot export — and the drop reported at most once
 * a minute. The thread's batch processor then drops what exceeds its own queue
 * (`OTEL_BSP_MAX_QUEUE_SIZE`), as the SDK does. If the thread dies, what follows is
 * dropped and the failure reported once; serving goes on.
 */
import { Worker } from 'node:worker_threads';
import type { SpanRecord } from './spanRecord.js';

/** Messages to the export thread. */
export type ToExportThread =
  | { readonly type: 'spans'; readonly spans: SpanRecord[] }
  | { readonly type: 'shutdown' };

/** Messages from the export thread. */
export type FromExportThread =
  | { readonly type: 'taken'; readonly count: number }
  | { readonly type: 'exportFailed'; readonly message: string }
  | { readonly type: 'stopped' };

/** How long a finished span may wait here before it is posted. */
const FLUSH_DELAY_MS = 200;
/** Posted at once when this many are waiting. */
const FLUSH_AT = 256;
/** Records here or posted and not yet taken, at most (twice the SDK's default queue). */
const MAX_WAITING = 4096;
/** The export thread's old-generation heap, at most: several times what a full queue holds. */
const MAX_THREAD_HEAP_MB = 64;

export interface SpanHandoff {
  /** A recorded span has ended. */
  finish(record: SpanRecord): void;
  /** Posts what waits, has the export thread export what it holds, and stops it; waits at most `timeoutMs`. */
  shutdown(timeoutMs: number): Promise<void>;
}

/**
 * The handoff to an export thread started with the first batch (a gateway whose start
 * fails, or that records nothing, never starts it); `exportFailed` hears of batches the
 * collector did not take and of spans dropped here.
 */
export function createSpanHandoff(
  exportFailed?: (message: string) => void,
  maxWaiting = MAX_WAITING,
): SpanHandoff {
  // The variables as they are now: the SDK in the thread reads them when it starts.
  const env = { ...process.env };
  let worker: Worker | null = null;
  let pending: SpanRecord[] = [];
  /** Posted to the thread, not yet taken by it. */
  let posted = 0;
  let dropped = 0;
  let lastDropReport = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | null = null;
  let alive = true;
  let stopped: Promise<void> | undefined;
  let onStopped: (() => void) | null = null;

  const lost = (message: string): void => {
    if (!alive) return;
    alive = false;
    pending = [];
    exportFailed?.(message);
    onStopped?.();
  };

  const thread = (): Worker | null => {
    if (worker !== null || !alive) return worker;
    try {
      worker = new Worker(new URL('./traceExportWorker.js', import.meta.url), {
        env,
        // None of the process's Node options (a `--import` hook has no business there).
        execArgv: [],
        // A runaway export (a collector that never answers, retries piling up) ends the
        // thread, reported below, instead of growing the gateway's memory.
        resourceLimits: { maxOldGenerationSizeMb: MAX_THREAD_HEAP_MB },
      });
    } catch (error) {
      lost(`the export thread did not start: ${(error as Error).message}`);
      return null;
    }
    worker.unref();
    worker.on('message', (message: FromExportThread) => {
      if (message.type === 'taken') posted -= message.count;
      else if (message.type === 'exportFailed') exportFailed?.(message.message);
      else onStopped?.();
    });
    worker.on('error', (error) => lost(`the export thread failed: ${error.message}`));
    worker.on('exit', () => lost('the export thread stopped'));
    return worker;
  };

  const flush = (): void => {
    if (timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
    if (pending.length === 0) return;
    const spans = pending;
    pending = [];
    const to = thread();
    if (to === null) return;
    posted += spans.length;
    to.postMessage({ type: 'spans', spans } satisfies ToExportThread);
  };

  const drop = (): void => {
    dropped++;
    const now = performance.now();
    if (now - lastDropReport < 60_000) return;
    lastDropReport = now;
    exportFailed?.(`spans dropped: the export thread is behind (${dropped} so far)`);
  };

  return {
    finish(record) {
      if (!alive || stopped !== undefined) return;
      if (posted + pending.length >= maxWaiting) {
        drop();
        return;
      }
      pending.push(record);
      if (pending.length >= FLUSH_AT) flush();
      else if (timer === null) timer = setTimeout(flush, FLUSH_DELAY_MS).unref();
    },

    shutdown(timeoutMs) {
      stopped ??= (async () => {
        flush();
        const running = worker;
        if (running === null) {
          alive = false;
          return;
        }
        if (alive) {
          let timeout: NodeJS.Timeout | undefined;
          await new Promise<void>((resolve) => {
            onStopped = resolve;
            timeout = setTimeout(resolve, timeoutMs);
            running.postMessage({ type: 'shutdown' } satisfies ToExportThread);
          });
          clearTimeout(timeout);
        }
        alive = false;
        await running.terminate();
      })();
      return stopped;
    },
  };
}
