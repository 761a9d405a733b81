/**
 * The token endpoints' limits (the contract's operation and the OAuth 2.0 endpoints), a
 * composition over a `Limiter` built from `tokenLimits.*`:
 *
 *   address       a bucket per source address (`perAddress`), taken before the body is read
 *   client        a bucket per client id, for its requests from addresses that are not
 *                 known pairs (`perClient`)
 *   client-known  a second bucket per client id at the same rule, for its known pairs:
 *                 wrong secrets sprayed from other addresses cannot drain it
 *   back-off      the limiter's, per (client id, address) (`failedSecretBackoff`)
 *
 * A limit that is off answers 0 without asking the limiter. The family names are the
 * Redis key namespaces (`limits:address:…`, `limits:client:…`, `limits:client-known:…`)
 * and what a worker names to its primary; the fallback labels are `address` and `client`.
 * A client id is client-chosen, known or not: its bucket key is `clientKey` (bounded),
 * and an unknown id is limited like a known one, so the limits do not tell which ids
 * exist.
 *
 * A known pair got a token within `KNOWN_PAIR_MS`: the address proved it holds the
 * client's secret. The window is twice the longest token lifetime, so a client fetching a
 * token at least daily from an address stays known there. A mark is made only by
 * accepted credentials, so nobody without a secret can make the limiter hold one, and
 * knowing a pair never shortens its own back-off.
 */
import type { TokenLimitsConfig } from '../config/types.js';
import {
  type BucketFamily,
  bucketFamily,
  type Limiter,
  type LimiterSettings,
  type PairCheck,
  type WaitMs,
} from './limiter.js';
import { clientKey } from './limitKeys.js';
import { NO_LIMITS } from './noLimits.js';

/** The fallback labels of the token endpoints' families. */
export type TokenLimitLabel = 'address' | 'client';

export interface TokenLimitFamilies {
  readonly address: BucketFamily<'address'> | null;
  readonly client: BucketFamily<'client'> | null;
  readonly clientKnown: BucketFamily<'client'> | null;
}

/** The families `config` turns on (null: that limit is off). */
export function tokenLimitFamilies(config: TokenLimitsConfig): TokenLimitFamilies {
  const { perAddress, perClient } = config;
  return {
    address: perAddress.enabled ? bucketFamily('address', perAddress, 'address') : null,
    client: perClient.enabled ? bucketFamily('client', perClient, 'client') : null,
    clientKnown: perClient.enabled ? bucketFamily('client-known', perClient, 'client') : null,
  };
}

/** The families that are on, by name (how the primary resolves a worker's call). */
export function familiesByName(
  families: TokenLimitFamilies,
): ReadonlyMap<string, BucketFamily<TokenLimitLabel>> {
  const on = [families.address, families.client, families.clientKnown].filter((f) => f !== null);
  return new Map(on.map((family) => [family.name, family]));
}

/** The limiter's own settings: the back-off, and known pairs for the client buckets. */
export function tokenLimiterSettings(config: TokenLimitsConfig): LimiterSettings {
  const { failedSecretBackoff } = config;
  return {
    maxTrackedKeys: config.maxTrackedKeys,
    backoff: failedSecretBackoff.enabled ? failedSecretBackoff : null,
    knownPairs: config.perClient.enabled,
  };
}

/** Whether any token limit is on (else no limiter is made). */
export function anyTokenLimit(config: TokenLimitsConfig): boolean {
  return (
    config.perAddress.enabled || config.perClient.enabled || config.failedSecretBackoff.enabled
  );
}

export class TokenEndpointLimits {
  readonly #limiter: Limiter<TokenLimitLabel>;
  readonly #address: BucketFamily<'address'> | null;
  readonly #client: BucketFamily<'client'> | null;
  readonly #clientKnown: BucketFamily<'client'> | null;

  constructor(limiter: Limiter<TokenLimitLabel>, families: TokenLimitFamilies) {
    this.#limiter = limiter;
    this.#address = families.address;
    this.#client = families.client;
    this.#clientKnown = families.clientKnown;
  }

  /** One request from `address` (before the body is read). */
  takeAddress(address: string): WaitMs {
    return this.#address === null ? 0 : this.#limiter.take(this.#address, address);
  }

  /** Whether (client, address) still waits after wrong secrets, and whether it is known. */
  checkPair(clientId: string, address: string): PairCheck | Promise<PairCheck> {
    return this.#limiter.checkBackoff(clientId, address);
  }

  /** One request naming `clientId`, from a known pair (`known`) or not. */
  takeClient(clientId: string, known: boolean): WaitMs {
    const family = known ? this.#clientKnown : this.#client;
    return family === null ? 0 : this.#limiter.take(family, clientKey(clientId));
  }

  /** Refused credentials for `clientId` from `address`. */
  recordFailure(clientId: string, address: string): void | Promise<void> {
    return this.#limiter.recordFailure(clientId, address);
  }

  /** Accepted credentials: the pair's failures are forgotten and it is known. */
  recordSuccess(clientId: string, address: string): void | Promise<void> {
    return this.#limiter.recordSuccess(clientId, address);
  }

  close(): Promise<void> {
    return this.#limiter.close();
  }
}

/** Every token limit off: the same steps, no wait, nothing recorded. */
export const NO_TOKEN_LIMITS = new TokenEndpointLimits(NO_LIMITS, {
  address: null,
  client: null,
  clientKnown: null,
});
