/**
 * The contract's token operation as the public listener serves it: the token service
 * (signing with the live key ring, authenticating the live clients), the token limits
 * and the failed-secret back-off, counted by the metrics. The OAuth endpoints share it.
 */
import type { Config } from '../config/types.js';
import type { TokenRouteDeps } from '../http/tokenRoute.js';
import type { Clock } from '../lib/clock.js';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import { createLimiter } from '../limits/createLimiter.js';
import type { Limiter } from '../limits/limiter.js';
import { PairAttempts } from '../limits/pairAttempts.js';
import { RedisLimiter } from '../limits/redisLimiter.js';
import type { LimitReason } from '../limits/refuseIfWaiting.js';
import {
  anyTokenLimit,
  NO_TOKEN_LIMITS,
  TokenEndpointLimits,
  type TokenLimitLabel,
  tokenLimiterSettings,
  tokenLimitFamilies,
} from '../limits/tokenEndpointLimits.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { RevocationStore } from '../revocation/revocationStore.js';
import { TokenService } from '../token/tokenService.js';
import type { LiveState } from './liveState.js';

export interface LimiterDeps {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** A worker's: its primary's limiter (undefined: made here). */
  readonly shared: Limiter | undefined;
}

/** The token limits (null: every limit off), bound to the metrics and the logger. */
export async function openTokenLimiter(
  config: Config,
  deps: LimiterDeps,
): Promise<TokenEndpointLimits | null> {
  const { logger, metrics } = deps;
  const limits = config.tokenLimits;
  if (!anyTokenLimit(limits)) return null;
  const limiter =
    deps.shared ??
    (await createLimiter<TokenLimitLabel>({
      settings: tokenLimiterSettings(limits),
      store: limits.store,
      redis: config.redis,
      clock: deps.clock,
      hooks: {
        fallback: (check) => metrics.tokenLimitFallback(check),
        stateChanged: (limitState, error) => {
          if (limitState === 'down')
            logger.warn({ error }, 'token limits: Redis unusable, each replica limits on its own');
          else logger.info('token limits: Redis usable again, limits are shared');
        },
      },
    }));
  if (limiter instanceof RedisLimiter) {
    metrics.addRedisConnectionSource('limits', () => limiter.connected());
  }
  return new TokenEndpointLimits(limiter, tokenLimitFamilies(limits));
}

export interface TokenRouteWiringDeps {
  readonly clock: Clock;
  readonly state: Pick<LiveState, 'authenticate' | 'keyRing'>;
  readonly revocation: Pick<RevocationStore, 'clientCutoff'>;
  readonly limiter: TokenEndpointLimits | null;
  readonly trustedProxies: TrustedProxies;
  readonly metrics: Metrics;
}

export function tokenRouteDeps(config: Config, deps: TokenRouteWiringDeps): TokenRouteDeps {
  const { clock, state, revocation, limiter, metrics } = deps;
  const tokens = new TokenService({
    authenticate: () => state.authenticate,
    signingKey: () => state.keyRing.signingKey,
    issuer: config.issuer,
    audience: config.audience,
    defaultLifetimeSeconds: config.token.lifetimeSeconds,
    responseFields: config.token.responseFields,
    clock,
    clientCutoff: (clientId) => revocation.clientCutoff(clientId),
    profile: config.profile,
  });
  return {
    tokens,
    bodyLimitBytes: config.token.bodyLimitBytes,
    onOutcome: (outcome: string) => metrics.tokenRequest(outcome),
    onIssued: (clientId: string) => metrics.tokenIssuedTo(clientId),
    limiter: limiter ?? NO_TOKEN_LIMITS,
    attempts:
      limiter !== null && config.tokenLimits.failedSecretBackoff.enabled
        ? new PairAttempts(
            config.tokenLimits.maxTrackedKeys,
            config.tokenLimits.failedSecretBackoff.forgetAfterSeconds,
            clock,
          )
        : null,
    trustedProxies: deps.trustedProxies,
    onLimited: (reason: LimitReason) => metrics.tokenLimitRefusal(reason),
  };
}
