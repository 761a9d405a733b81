/**
 * The token endpoints' limits over a limiter of this process, as a gateway with
 * `tokenLimits.store: local` builds them (`app/tokenRouteWiring.ts`). Typed with the
 * local limiter's answers, values rather than promises, which the composition passes on
 * unchanged (an assertion comparing a promise with a number fails).
 */
import type { TokenLimitsConfig } from '../../src/config/types.js';
import type { Clock } from '../../src/lib/clock.js';
import type { PairCheck } from '../../src/limits/limiter.js';
import { LocalLimiter } from '../../src/limits/localLimiter.js';
import {
  TokenEndpointLimits,
  tokenLimiterSettings,
  tokenLimitFamilies,
} from '../../src/limits/tokenEndpointLimits.js';

export interface LocalTokenLimits extends TokenEndpointLimits {
  takeAddress(address: string): number;
  checkPair(clientId: string, address: string): PairCheck;
  takeClient(clientId: string, known: boolean): number;
  recordFailure(clientId: string, address: string): void;
  recordSuccess(clientId: string, address: string): void;
}

export function localTokenLimits(config: TokenLimitsConfig, clock: Clock): LocalTokenLimits {
  return new TokenEndpointLimits(
    new LocalLimiter(tokenLimiterSettings(config), clock),
    tokenLimitFamilies(config),
  ) as LocalTokenLimits;
}
