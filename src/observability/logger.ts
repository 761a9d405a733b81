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
