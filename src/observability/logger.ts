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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'portaria' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ dest: 1, sync: false, minLength: 4096 }),
  );
}
