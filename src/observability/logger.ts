/**
 * The pino logger. JSON lines; secrets are redacted by path as a second line of defence
 * (the first is that no code path logs headers, bodies, tokens or hashes at all).
 */
import { type DestinationStream, type Logger, pino } from 'pino';

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
   * The access log: one line per request with fixed, non-secret fields (request id,
   * method, route id, status, duration, client id, reason code). It skips redaction,
   * which would cost more than the rest of the line on the hot path; the fields are
   * built by `http/publicGateway.ts` only, and a test proves no secret reaches them.
   */
  readonly access: AccessLog;
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
  /** One `request` line; `clientId` and `reason` are left out when undefined. */
  request(
    reqId: string,
    method: string,
    route: string,
    status: number,
    durationMs: number,
    clientId: string | undefined,
    reason: string | undefined,
  ): void;
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

export function createLoggers(level: string, destination?: DestinationStream): Loggers {
  const stream = destination ?? pino.destination({ dest: 1, sync: false });
  const common = {
    level,
    base: { service: 'portaria' },
    formatters: { level: (label: string) => ({ level: label }) },
  };
  const access = pino({ ...common, base: { service: 'portaria', log: 'access' } }, stream);
  return {
    logger: pino(
      {
        ...common,
        timestamp: pino.stdTimeFunctions.isoTime,
        redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
      },
      stream,
    ),
    access: createAccessLog(access, stream),
  };
}

/** The line prefix pino writes for the access logger (`level` label, `time` in epoch ms). */
const LINE_START = '{"level":"info","time":';
const LINE_BASE = ',"service":"portaria","log":"access","reqId":';

/** Access lines gathered before one write to the destination (characters, ~70 lines). */
const BATCH_CHARS = 16_384;
/** Longest time an access line waits for its batch to be written. */
const BATCH_MS = 50;

function createAccessLog(logger: Logger, stream: DestinationStream): AccessLog {
  // The level is fixed at start (the configuration has no runtime level change).
  const enabled = logger.isLevelEnabled('info');
  let pending = '';
  let timer: NodeJS.Timeout | null = null;
  let batching = true;
  const flush = (): void => {
    if (timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
    if (pending === '') return;
    const batch = pending;
    pending = '';
    stream.write(batch);
  };
  return {
    logger,
    request(reqId, method, route, status, durationMs, clientId, reason) {
      if (!enabled) return;
      let line = `${LINE_START}${Date.now()}${LINE_BASE}${jsonString(reqId)},"method":${jsonString(method)},"route":${jsonString(route)},"status":${status},"durationMs":${Number.isFinite(durationMs) ? durationMs : null}`;
      if (clientId !== undefined) line += `,"clientId":${jsonString(clientId)}`;
      if (reason !== undefined) line += `,"reason":${jsonString(reason)}`;
      pending += `${line},"msg":"request"}\n`;
      if (pending.length >= BATCH_CHARS || !batching) flush();
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

/**
 * `JSON.stringify(text)`, with a fast path for the common case: short printable ASCII
 * with no `"` or `\\` needs no escaping. Anything else (client ids of external issuers
 * can hold any character) goes through `JSON.stringify`.
 */
export function jsonString(text: string): string {
  if (text.length > 64) return JSON.stringify(text);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return JSON.stringify(text);
  }
  return `"${text}"`;
}
