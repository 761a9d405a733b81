/** `tokenLimits`: the failed-secret back-off's ceiling not below its first delay. */
import { type Loose, section } from './looseValues.js';

export function tokenLimitProblems(config: Loose): string[] {
  const backoff = section(section(config.tokenLimits).failedSecretBackoff);
  if (
    typeof backoff.maxDelayMs === 'number' &&
    typeof backoff.baseDelayMs === 'number' &&
    backoff.maxDelayMs < backoff.baseDelayMs
  ) {
    return ['tokenLimits.failedSecretBackoff.maxDelayMs: must be at least baseDelayMs'];
  }
  return [];
}
