/**
 * The key-set settings of an OAuth client's own keys (`private_key_jwt`, RFC 7523): those
 * of a trusted issuer, with the client's one key source and algorithm. One definition for
 * the gateway (`oauth/clientKeys.ts`) and for the CLI's check of a `--jwks` file, so the
 * CLI reads a file exactly as the gateway will.
 */
import type { IssuerConfig } from '../config/types.js';

export interface ClientKeySource {
  /** Names the set in its log lines and problems. */
  readonly issuer: string;
  readonly jwksUri: string | null;
  /** An absolute path, or null. */
  readonly keyFile: string | null;
  readonly algorithm: IssuerConfig['algorithms'][number];
  readonly clockSkewSeconds: number;
}

export function clientKeySetConfig(source: ClientKeySource): IssuerConfig {
  return {
    id: 'client',
    issuer: source.issuer,
    jwksUri: source.jwksUri,
    allowPlainHttp: false,
    keyFile: source.keyFile,
    audiences: [],
    algorithms: [source.algorithm],
    clockSkewSeconds: source.clockSkewSeconds,
    requireTyp: false,
    maxLifetimeSeconds: 3600,
    cacheMaxAgeSeconds: 600,
    cooldownSeconds: 30,
    maxStalenessSeconds: 3600,
    fetchTimeoutMs: 5000,
  };
}
