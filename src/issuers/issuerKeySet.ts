/**
 * The key set of one trusted external issuer, as the verifier and readiness see it, and
 * the factory that picks its source: `jwksUri` → `RemoteKeySet` (cached, refreshed,
 * stale-if-error), `keyFile` → `StaticKeySet` (read from disk, reloadable).
 *
 * The shared value types are defined in `issuerJwks.ts` (the key) and `remoteKeySet.ts`
 * (state, hooks) and re-exported here, so the implementations need not import this
 * module (no cycle).
 */
import type { IssuerConfig } from '../config/types.js';
import type { IssuerKey } from './issuerJwks.js';
import { type IssuerKeySetState, RemoteKeySet, type RemoteKeySetDeps } from './remoteKeySet.js';
import { StaticKeySet } from './staticKeySet.js';

export type { IssuerKey } from './issuerJwks.js';
export type {
  FetchOutcome,
  FetchTrigger,
  IssuerKeySetState,
  KeySetHooks,
} from './remoteKeySet.js';

export interface IssuerKeySet {
  /**
   * The key for `kid` and `alg`. Synchronous when known; may fetch (unknown kid, within
   * the cooldown rules). null = unknown kid or another alg (→ 401). Throws (or rejects
   * with) a 503 `PortariaError('issuer-unavailable')` when no key set younger than
   * cacheMaxAge + maxStaleness is held.
   */
  getKey(kid: string, alg: string): IssuerKey | null | Promise<IssuerKey | null>;
  /** Start-up step awaited before listening: a key file is read here and a bad one throws `ConfigError`; remote: nothing to do. */
  load(): Promise<void>;
  /** Remote: startup fetch and background refresh. Static: loads if not loaded yet. */
  start(): void;
  /** Resolves after the first successful load; never rejects (see `state()`). */
  ready(): Promise<void>;
  state(): IssuerKeySetState;
  /** Stops timers and aborts a fetch in flight. */
  close(): void;
}

/** The remote key set's dependencies, and where the issuer stands in the config. */
export interface IssuerKeySetDeps extends RemoteKeySetDeps {
  /** Position in `issuers`, for configuration-error paths. */
  readonly index?: number;
}

export function createIssuerKeySet(config: IssuerConfig, deps: IssuerKeySetDeps): IssuerKeySet {
  if (config.jwksUri !== null) return new RemoteKeySet(config, deps);
  if (config.keyFile !== null) return new StaticKeySet(config, deps);
  throw new Error(`issuer ${config.id}: neither jwksUri nor keyFile (config validation missed it)`);
}
