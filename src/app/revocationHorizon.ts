/**
 * How long a token of any trusted issuer can stay valid: the longest lifetime (ours is at
 * most 86,400 s; each external issuer's `maxLifetimeSeconds`) and the largest clock skew.
 * A revocation entry of unknown expiry lives that long, and a client revocation's default
 * cut-off is now + that skew (a token signed by a clock running ahead carries a later iat).
 */
import { MAX_LIFETIME_SECONDS } from '../clients/clientRegistry.js';
import type { Config } from '../config/types.js';

export interface RevocationHorizon {
  readonly maxLifetimeSeconds: number;
  readonly clockSkewSeconds: number;
}

export function revocationHorizon(config: Config): RevocationHorizon {
  return {
    maxLifetimeSeconds: Math.max(
      MAX_LIFETIME_SECONDS,
      ...config.issuers.map((i) => i.maxLifetimeSeconds),
    ),
    clockSkewSeconds: Math.max(
      config.clockSkewSeconds,
      ...config.issuers.map((i) => i.clockSkewSeconds),
    ),
  };
}
