/**
 * Every watched source and what a reload of it applies:
 * - clients file → a new client authenticator;
 * - keys directory → a new signing key ring (late publications warned about), cache emptied;
 * - an external issuer's key file → its keys reloaded, cache emptied;
 * - the configuration file (when there is one) → routes and `upstream.default`; other
 *   settings change only on restart, and a reload that changes them says so;
 * - the public listener's TLS files (certificate, key, client CAs and CRLs) → a new
 *   secure context: new handshakes use it, open connections keep their session.
 * A key that left a ring must not keep verifying through the verified-token cache.
 */
import { createClientAuthenticator } from '../clients/authenticateClient.js';
import type { Config } from '../config/types.js';
import type { IssuerKeySet } from '../issuers/issuerKeySet.js';
import { StaticKeySet } from '../issuers/staticKeySet.js';
import { latePublications } from '../keys/latePublication.js';
import { isKeyDirectoryEntry } from '../keys/loadKeyRing.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { meteringPolicies } from '../pipeline/meteringPolicies.js';
import { loadProfiledClients, loadProfiledKeyRing } from '../profile/profileLoads.js';
import type { Forwarder } from '../proxy/forwarder.js';
import { compileRouteTable } from '../proxy/routeTable.js';
import type { ContentFingerprint } from '../reload/contentFingerprint.js';
import { type ReloadOutcome, type WatchedSource, watchSource } from '../reload/watchedSource.js';
import type { ServerTls } from '../tls/serverTls.js';
import {
  loadTlsMaterial,
  tlsFilePaths,
  tlsSettingsOf,
  validityProblem,
} from '../tls/tlsMaterial.js';
import type { VerifiedTokenCache } from '../verify/verifiedTokenCache.js';
import type { LiveState } from './liveState.js';
import { metersRequests } from './quotaWiring.js';

export interface ReloadDeps {
  readonly config: Config;
  readonly clock: Clock;
  readonly state: LiveState;
  readonly cache: VerifiedTokenCache;
  readonly forwarder: Forwarder;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly issuerSets: readonly {
    readonly config: { readonly id: string; readonly keyFile: string | null };
    readonly keys: IssuerKeySet;
  }[];
  /** Fingerprints taken before the first loads (see `sourceBaseline`). */
  readonly since: {
    readonly clients: Promise<ContentFingerprint>;
    readonly keys: Promise<ContentFingerprint>;
    readonly issuerFiles: ReadonlyMap<string, Promise<ContentFingerprint>>;
    readonly tls?: Promise<ContentFingerprint>;
  };
  /** The public listener's TLS (`server.tls`); absent: a plain listener. */
  readonly tls?: ServerTls;
  /** The configuration file and how to read it again; absent in demo mode. */
  readonly configSource?: {
    readonly file: string;
    readonly reload: () => Promise<Config>;
    readonly since?: Promise<ContentFingerprint>;
  };
}

export function watchReloadSources(deps: ReloadDeps): WatchedSource[] {
  const { config, clock, state, cache, logger, metrics } = deps;
  const watch = { watch: config.reload.enabled, pollIntervalMs: config.reload.pollIntervalMs };
  const onOutcome = (source: string, outcome: ReloadOutcome, problems: readonly string[]) => {
    metrics.configReload(source, outcome);
    if (outcome === 'failed') {
      logger.error({ source, problems }, 'reload failed: keeping the previous configuration');
    } else if (outcome === 'applied') {
      logger.info({ source }, 'reloaded');
    }
  };
  const sources: WatchedSource[] = [
    watchSource({
      name: 'clients',
      paths: [config.clients.file],
      since: deps.since.clients,
      // A client's quota names a policy of the live configuration (reloaded with the routes).
      load: () => loadProfiledClients(config, new Set(state.quotaPolicies.keys())),
      apply: (registry) => {
        state.authenticate = createClientAuthenticator(registry, clock);
        state.clients = registry;
        state.clientCount = registry.size;
      },
      onOutcome,
      ...watch,
    }),
    watchSource({
      name: 'keys',
      paths: [config.keys.dir],
      // Only the files the loader reads: a clients.json or admin token mounted in the
      // same directory (the chart's Secret) must not reload keys and empty the cache.
      directoryEntries: isKeyDirectoryEntry,
      since: deps.since.keys,
      load: () => loadProfiledKeyRing(config, clock),
      apply: (ring) => {
        const maxAgeMs = config.keys.jwksMaxAgeSeconds * 1000;
        for (const key of latePublications(state.keyRing, ring, clock.now(), maxAgeMs)) {
          logger.warn(
            {
              kid: key.kid,
              activateAt: key.activateAt === null ? null : new Date(key.activateAt).toISOString(),
              jwksMaxAgeSeconds: config.keys.jwksMaxAgeSeconds,
            },
            'signing key published late: verifiers caching the JWKS, and replicas that have not loaded it, may refuse its tokens until they have it',
          );
        }
        state.keyRing = ring;
        cache.clear();
      },
      onOutcome,
      ...watch,
    }),
    ...deps.issuerSets.flatMap((s) =>
      s.keys instanceof StaticKeySet
        ? [
            watchSource({
              name: `issuer-keys:${s.config.id}`,
              paths: [s.config.keyFile as string],
              since: deps.since.issuerFiles.get(s.config.id),
              load: () => (s.keys as StaticKeySet).reload(),
              apply: () => cache.clear(),
              onOutcome,
              ...watch,
            }),
          ]
        : [],
    ),
  ];
  const tls = deps.tls;
  if (tls !== undefined) {
    const settings = tlsSettingsOf(config);
    sources.push(
      watchSource({
        name: 'tls',
        paths: tlsFilePaths(settings),
        since: deps.since.tls,
        load: () => loadTlsMaterial(settings),
        apply: (material) => {
          tls.apply(material);
          const problem = validityProblem(material, clock.now());
          if (problem !== null) logger.warn({ setting: 'server.tls.certFile' }, problem);
        },
        onOutcome,
        ...watch,
      }),
    );
  }
  const configSource = deps.configSource;
  if (configSource) {
    sources.push(
      watchSource({
        name: 'routes',
        paths: [configSource.file],
        since: configSource.since,
        load: configSource.reload,
        apply: (next) => {
          state.routes = compileRouteTable(next);
          state.quotaPolicies = meteringPolicies(next.quotas);
          deps.forwarder.setOrigins(state.routes.origins);
          const changed = settingsNeedingRestart(config, next);
          if (changed.length > 0) {
            logger.warn({ settings: changed }, 'these settings change only on restart');
          }
        },
        onOutcome,
        ...watch,
      }),
    );
  }
  metrics.configSources(sources.map((source) => source.name));
  return sources;
}

/** Top-level settings a reload cannot apply (only routes, upstream.default and quotas.policies reload). */
function settingsNeedingRestart(current: Config, next: Config): string[] {
  const ignored = new Set(['routes', 'upstream', 'quotas']);
  const changed = Object.keys(current).filter(
    (key) =>
      !ignored.has(key) &&
      JSON.stringify(current[key as keyof Config]) !== JSON.stringify(next[key as keyof Config]),
  );
  const { default: _d, ...restNow } = current.upstream;
  const { default: _n, ...restNext } = next.upstream;
  if (JSON.stringify(restNow) !== JSON.stringify(restNext)) changed.push('upstream');
  const { policies: _p, ...quotasNow } = current.quotas;
  const { policies: _q, ...quotasNext } = next.quotas;
  if (JSON.stringify(quotasNow) !== JSON.stringify(quotasNext)) changed.push('quotas');
  // Started without a policy, the gateway has no meter and no quota step to reload into.
  if (!metersRequests(current) && metersRequests(next)) changed.push('quotas.policies');
  return changed;
}
