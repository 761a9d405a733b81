/**
 * `identityHeaders` and `forwardCallerHeaders`: an identity header may not be one the
 * gateway manages nor serve two claims; a caller header forwarded must be one the gateway
 * would otherwise remove.
 */
import { CALLER_HEADERS, headerKey } from './callerHeaders.js';
import { type Loose, section, strings, text } from './looseValues.js';

/** Headers the gateway owns: an identity-header mapping may not name them. */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'content-type',
  'cookie',
  'x-request-id',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'forwarded',
]);

export function identityHeaderProblems(config: Loose): string[] {
  const problems: string[] = [];
  const headerNames = new Map<string, string>();
  for (const [claim, value] of Object.entries(section(config.identityHeaders))) {
    const header = text(value);
    if (header === null) continue;
    const lower = header.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) {
      problems.push(`identityHeaders.${claim}: "${header}" is a header the gateway manages`);
    }
    const other = headerNames.get(lower);
    if (other)
      problems.push(`identityHeaders.${claim}: "${header}" is also used for claim "${other}"`);
    headerNames.set(lower, claim);
  }
  return problems;
}

export function callerHeaderProblems(config: Loose): string[] {
  const problems: string[] = [];
  const callerHeaders = new Set(CALLER_HEADERS);
  for (const [i, name] of strings(config.forwardCallerHeaders)) {
    if (!callerHeaders.has(headerKey(name))) {
      problems.push(
        `forwardCallerHeaders[${i}]: "${name}" is not a header the gateway removes (one of ${CALLER_HEADERS.join(', ')})`,
      );
    }
  }
  return problems;
}
