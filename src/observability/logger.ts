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
  readonly access: Logger;
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
  return {
    logger: pino(
      {
        ...common,
        timestamp: pino.stdTimeFunctions.isoTime,
        redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
      },
      stream,
    ),
    access: pino({ ...common, base: { service: 'portaria', log: 'access' } }, stream),
  };
}
