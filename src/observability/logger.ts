/**
 * The pino logger. JSON lines; secrets are redacted by path as a second line of defence
 * (the first is that no code path logs headers, bodies, tokens or hashes at all).
 */
import { fstatSync } from 'node:fs';
import { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { type DestinationStream, type Logger, pino } from 'pino';
import { type AccessRecord, accessFieldsJson, lastFieldsAscii } from './accessLine.js';
import { escapeForReaders } from './jsonLineEscapes.js';

export type { DestinationStream, Logger };

/** Paths censored wherever they appear in a log object (pino fast-redact syntax). */
export const REDACT_PATHS: readonly string[] = [
  'authorization',
  'clientSecret',
  'secret',
  'token',
  'hash',
  'password',
  '*.authorization',
  '*.clientSecret',
  '*.secret',
  '*.token',
  '*.hash',
  '*.password',
  'headers.authorization',
  '*.headers.authorization',
  'headers.cookie',
  '*.headers.cookie',
];

export interface Loggers {
  /** Events and errors, with redaction. */
  readonly logger: Logger;
  /**
   * The access log: one line per request with fixed, non-secret fields
   * (`accessLine.ts`). It skips redaction, which would cost more than the rest of the
   * line on the hot path; the fields are built by `http/requestAccounting.ts` only, and a
   * test proves no secret reaches them.
   */
  readonly access: AccessLog;
  /** Log writes dropped because the output's reader fell too far behind (see `MAX_LOG_BACKLOG_BYTES`). */
  readonly droppedWrites: () => number;
}

/**
 * The access log. `request` is the hot path: the line is serialised by hand, with the
 * same fields in the same order as pino writes them (`level`, `time`, `service`, `log`,
 * the fields, `msg`), onto the same destination stream — pino's generic serialiser cost
 * more than the rest of the line. Other access events (WebSocket upgrades) go through
 * pino (`logger`).
 */
export interface AccessLog {
  /** The pino access logger (no redaction), for the other access events. */
  readonly logger: Logger;
  /** Hands every gathered line to the destination now. */
  flush(): void;
  /**
   * Shutdown: flushes, then writes every later line at once — requests still finishing
   * while the process stops must not wait for a batch timer that will never fire.
   */
  stopBatching(): void;
  /** One `request` line (fields: `accessLine.ts`; absent values are left out), with its trace's ids when it has one. */
  request(record: AccessRecord, trace?: TraceIds | null): void;
}

/** A request's trace ids, written as `trace_id`, `span_id`, `trace_flags` (hex). */
export interface TraceIds {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: string;
}

/**
 * The stream for `log.pretty`: pino-pretty, a development dependency, so a production
 * install (`npm ci --omit=dev`) does not have it and start-up fails with this message.
 */
export async function prettyDestination(): Promise<DestinationStream> {
  let build: (options: Record<string, unknown>) => DestinationStream;
  try {
    ({ build } = await import('pino-pretty'));
  } catch {
    throw new Error(
      'log.pretty needs the development dependency pino-pretty, which this install does not have: turn log.pretty off (JSON logs) in production',
    );
  }
  // Colors follow the terminal (off when stdout is not a TTY or NO_COLOR is set).
  return build({ sync: true, translateTime: 'SYS:HH:MM:ss.l' });
}

/**
 * The log output on file descriptor `fd` (default stdout), chosen by what the descriptor is:
 *
 * - a **pipe or socket** (a container runtime, systemd, `| tee`): written like Node's own
 *   stdout stream on a pipe (a `net.Socket`: for fd 1 it is `process.stdout`). libuv writes
 *   from the event loop, without blocking it and without a thread-pool hop: what the pipe
 *   takes is written at once, the rest is queued until it drains. A thread-pool write
 *   (pino's asynchronous destination) cost ~50 µs of CPU per write on the bench machine
 *   against ~6 µs for the write itself (bench/RESULTS.md). If the reader goes away
 *   (EPIPE) logging stops instead of crashing the gateway.
 * - a **file or terminal**: pino's asynchronous destination (sonic-boom): a
 *   non-blocking write to a file is not possible, and a slow disk must not block the loop.
 */
export function outputDestination(
  fd = 1,
  maxBacklogBytes = MAX_LOG_BACKLOG_BYTES,
): DestinationStream {
  const stat = fstatSync(fd);
  if (stat.isFIFO() || stat.isSocket()) {
    const stream = fd === 1 ? process.stdout : new Socket({ fd, readable: false, writable: true });
    const output = new StreamOutput(stream, maxBacklogBytes);
    dropCounters.set(output, () => output.dropped);
    return output;
  }
  // minLength 1 writes as soon as there is a byte, like the default 0, but makes flush(cb)
  // wait until every line is written: with 0 sonic-boom calls back at once, and the exit
  // right after shutdown wrote its last lines synchronously while an earlier write was
  // still in flight, so "stopped" could land before "shutting down: draining".
  const boom = pino.destination({
    dest: fd,
    sync: false,
    minLength: 1,
    maxLength: maxBacklogBytes,
  });
  let dropped = 0;
  boom.on('drop', () => {
    dropped++;
  });
  dropCounters.set(boom, () => dropped);
  return boom;
}

/** Dropped-write counts of the destinations `outputDestination` made. */
const dropCounters = new WeakMap<object, () => number>();

/** Writes `destination` dropped on a full backlog (0 for one `outputDestination` did not make). */
export function droppedWrites(destination: DestinationStream): number {
  return dropCounters.get(destination)?.() ?? 0;
}

/**
 * Log bytes held in memory while the reader does not keep up; a write beyond it is
 * dropped whole (and counted) rather than letting a stalled log reader grow the heap
 * until the process is killed.
 */
export const MAX_LOG_BACKLOG_BYTES = 32 * 1024 * 1024;

/** A pipe or socket as a pino destination: ordered writes, `flush`, and no crash on EPIPE. */
class StreamOutput implements DestinationStream {
  readonly #stream: Writable;
  readonly #maxBacklogBytes: number;
  #broken = false;
  /** Writes dropped because the backlog was full (each is whole lines). */
  dropped = 0;

  constructor(stream: Writable, maxBacklogBytes: number) {
    this.#stream = stream;
    this.#maxBacklogBytes = maxBacklogBytes;
    // Nobody reads our output any more (EPIPE) or the descriptor failed: logs have
    // nowhere to go, and the gateway must keep serving.
    stream.on('error', () => {
      this.#broken = true;
    });
  }

  write(chunk: string | Buffer): void {
    if (this.#broken) return;
    if (this.#stream.writableLength >= this.#maxBacklogBytes) {
      this.dropped++;
      return;
    }
    this.#stream.write(chunk);
  }

  /** Writes what is queued, then closes the descriptor (tests and tools; never stdout). */
  end(): void {
    this.#stream.end();
  }

  /** Calls back once everything written so far has been handed to the descriptor. */
  flush(callback: (error?: Error) => void): void {
    if (this.#broken || this.#stream.writableLength === 0) {
      callback();
      return;
    }
    // Writes complete in order: this one's callback runs after every earlier one.
    this.#stream.write('', () => callback());
  }
}

/** Fields bound once into every line of the process, after `service`. */
export interface LogBindings {
  /** A worker of a group (`server.workers` > 1): its node:cluster id. Absent: one process. */
  readonly worker?: number;
}

export function createLoggers(
  level: string,
  destination?: DestinationStream,
  bindings: LogBindings = {},
): Loggers {
  const stream = destination ?? outputDestination();
  const base = { service: 'portaria', ...bindings };
  const accessBase = { ...base, log: 'access' };
  const common = {
    level,
    base,
    formatters: { level: (label: string) => ({ level: label }) },
    // A caller's string (a User-Agent, a path, a client id) may hold C1 controls or
    // U+2028, which pino writes raw as JSON allows (jsonLineEscapes.ts).
    hooks: { streamWrite: escapeForReaders },
  };
  const access = pino(
    {
      ...common,
      timestamp: pino.stdTimeFunctions.isoTime,
      base: accessBase,
    },
    stream,
  );
  return {
    logger: pino(
      {
        ...common,
        timestamp: pino.stdTimeFunctions.isoTime,
        redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
      },
      stream,
    ),
    access: createAccessLog(access, stream, accessBase),
    droppedWrites: () => droppedWrites(stream),
  };
}

/** The line prefix pino writes for the access logger (`level` label, then `time`). */
const LINE_START = '{"level":"info","time":"';
const LINE_END = ',"msg":"request"}\n';

/**
 * The line up to the fields: `level`, `time` (ISO 8601 UTC with milliseconds, as pino's
 * `isoTime`), then the access logger's base bindings as pino writes them (`service`,
 * `worker` in a group, `log`). Made once per millisecond: a busy gateway writes many
 * lines in the same one.
 */
function lineHeads(base: Readonly<Record<string, unknown>>): () => string {
  const bindings = JSON.stringify(base).slice(1, -1);
  let headMs = -1;
  let headText = '';
  return () => {
    const now = Date.now();
    if (now !== headMs) {
      headMs = now;
      headText = `${LINE_START}${new Date(now).toISOString()}",${bindings}`;
    }
    return headText;
  };
}

/** What every destination is besides a `DestinationStream` (typed for strings only). */
interface BufferWritable {
  write(chunk: Buffer): unknown;
}

/** Access-line bytes gathered before one write to the destination (~300 lines). */
const BATCH_BYTES = 65_536;
/** Longest time an access line waits for its batch to be written. */
const BATCH_MS = 50;

/**
 * Lines are encoded into a batch buffer as they are made, so a line's string dies young
 * (a batch held as a string lives up to 50 ms: long enough to be copied by young-
 * generation collections and promoted). The buffer is handed to the destination whole
 * and a new one started: the destination may still be writing the old one.
 */
function createAccessLog(
  logger: Logger,
  stream: DestinationStream,
  base: Readonly<Record<string, unknown>>,
): AccessLog {
  // The level is fixed at start (the configuration has no runtime level change).
  const enabled = logger.isLevelEnabled('info');
  const lineHead = lineHeads(base);
  // Pino's destinations are typed for strings; every one of them (a Node stream,
  // sonic-boom, pino-pretty) takes a Buffer.
  const output = stream as unknown as BufferWritable;
  let batch = Buffer.allocUnsafe(BATCH_BYTES);
  let used = 0;
  let timer: NodeJS.Timeout | null = null;
  let batching = true;
  const flush = (): void => {
    if (timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
    if (used === 0) return;
    const full = batch.subarray(0, used);
    batch = Buffer.allocUnsafe(BATCH_BYTES);
    used = 0;
    output.write(full);
  };
  /** `ascii`: every unit of `line` is below 0x80, so Latin-1 writes its UTF-8 bytes. */
  const append = (line: string, ascii: boolean): void => {
    // UTF-8 needs at most 3 bytes per UTF-16 unit: make room before writing.
    if (used + line.length * 3 > BATCH_BYTES) {
      flush();
      if (line.length * 3 > BATCH_BYTES) {
        output.write(Buffer.from(line));
        return;
      }
    }
    used += ascii ? batch.write(line, used, 'latin1') : batch.write(line, used);
  };
  return {
    logger,
    request(record, trace) {
      if (!enabled) return;
      const fields = accessFieldsJson(record);
      if (trace == null) {
        append(`${lineHead()}${fields}${LINE_END}`, lastFieldsAscii());
      } else {
        append(
          `${lineHead()}${fields},"trace_id":"${trace.traceId}","span_id":"${trace.spanId}","trace_flags":"${trace.traceFlags}"${LINE_END}`,
          false,
        );
      }
      if (!batching) flush();
      else if (timer === null) {
        timer = setTimeout(flush, BATCH_MS);
        timer.unref();
      }
    },
    flush,
    stopBatching() {
      batching = false;
      flush();
    },
  };
}
