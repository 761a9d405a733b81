/**
 * A worker's log output: its lines are sent to the primary, the one writer of the
 * group's output, so lines of different workers never interleave within a line however
 * large the writes (a pipe keeps writes atomic only up to PIPE_BUF, 4 KiB, and the access
 * log writes batches of up to 64 KiB). The access log's batching is kept: one message
 * carries up to a batch of lines. Cost and alternatives: docs/workers.md.
 *
 * Like the stdout output, a stalled reader must not grow the heap without bound: beyond
 * `maxBacklogBytes` not yet handed to the channel, a write is dropped whole and counted.
 */
import { MAX_LOG_BACKLOG_BYTES } from '../observability/logger.js';
import type { WorkerChannel } from './workerChannel.js';

export class IpcLogDestination {
  readonly #channel: WorkerChannel;
  readonly #maxBacklogBytes: number;
  #backlog = 0;
  /** Writes dropped because the backlog was full. */
  dropped = 0;

  constructor(channel: WorkerChannel, maxBacklogBytes = MAX_LOG_BACKLOG_BYTES) {
    this.#channel = channel;
    this.#maxBacklogBytes = maxBacklogBytes;
  }

  write(chunk: string | Buffer): void {
    const text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    if (text.length === 0) return;
    if (this.#backlog >= this.#maxBacklogBytes) {
      this.dropped++;
      return;
    }
    this.#backlog += text.length;
    this.#channel.send({ portaria: 'log', chunk: text }, () => {
      this.#backlog -= text.length;
    });
  }

  /** Calls back once every line written so far has been handed to the channel. */
  flush(callback: (error?: Error) => void): void {
    if (this.#backlog === 0) {
      callback();
      return;
    }
    // Messages are written in order: this one's callback runs after every earlier one.
    this.#channel.send({ portaria: 'log', chunk: '' }, () => callback());
  }
}
