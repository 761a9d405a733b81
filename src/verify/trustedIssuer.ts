/**
 * Builds the verifier's issuer table: our own issuer (keys from the in-memory key ring,
 * never over HTTP; our algorithms; `typ: at+jwt` always) and each configured external
 * issuer (keys from its key set; its audiences, algorithms, skew and `typ` rule).
 */

import { MAX_LIFETIME_SECONDS as MAX_OWN_LIFETIME_SECONDS } from '../clients/clientRegistry.js';
import { type Config, type IssuerConfig, SIGNING_ALGORITHMS } from '../config/types.js';
import type { IssuerKey } from '../issuers/issuerKeySet.js';
import type { TrustedIssuer } from './tokenVerifier.js';

/** What our own issuer needs of the key ring (read through a thunk: the ring reloads). */
export interface OwnKeys {
  verificationKey(kid: string): IssuerKey | undefined;
}

/** What an external issuer needs of its key set. */
export interface ExternalKeys {
  getKey(kid: string, alg: string): IssuerKey | null | Promise<IssuerKey | null>;
}

/** Every algorithm our keys sign with; a key verifies only tokens of its own `alg`. */
const OWN_ALGORITHMS: ReadonlySet<string> = new Set(SIGNING_ALGORITHMS);

/**
 * `ownAudiences`: the `aud` values our own tokens are accepted with (the gateway's
 * `audience` and the routes' audiences, RFC 8707); read per verification, as routes reload.
 * `'any'`: every audience (a token signed with our key is ours whatever resource it was
 * issued for: the introspection and revocation endpoints).
 */
export function buildIssuerTable(
  config: Pick<Config, 'issuer' | 'audience' | 'clockSkewSeconds'>,
  ownKeys: () => OwnKeys,
  externals: readonly { readonly config: IssuerConfig; readonly keys: ExternalKeys }[],
  ownAudiences: (() => readonly string[]) | 'any' = () => [config.audience],
): ReadonlyMap<string, TrustedIssuer> {
  const table = new Map<string, TrustedIssuer>();
  const audiences = ownAudiences === 'any' ? () => [config.audience] : ownAudiences;
  table.set(config.issuer, {
    id: 'self',
    issuer: config.issuer,
    get audiences() {
      return audiences();
    },
    anyAudience: ownAudiences === 'any',
    algorithms: OWN_ALGORITHMS,
    clockSkewSeconds: config.clockSkewSeconds,
    requireTyp: true,
    maxLifetimeSeconds: MAX_OWN_LIFETIME_SECONDS,
    key: (kid) => ownKeys().verificationKey(kid),
  });
  for (const { config: c, keys } of externals) {
    table.set(c.issuer, {
      id: c.id,
      issuer: c.issuer,
      audiences: c.audiences,
      algorithms: new Set(c.algorithms),
      clockSkewSeconds: c.clockSkewSeconds,
      requireTyp: c.requireTyp,
      maxLifetimeSeconds: c.maxLifetimeSeconds,
      key: (kid, alg) => keys.getKey(kid, alg),
    });
  }
  return table;
}
