/**
 * The public keys of `private_key_jwt` clients, from each client's `jwksFile` or `jwksUri`,
 * through the trusted issuers' key-set code (`issuers/`): the same JWK import rules
 * (asymmetric keys only, a `kid` each, RSA ≥ 2048 bits, the client's one `assertionAlg`),
 * and for a URI the same cache (max age, refresh, stale-if-error, cooldown on unknown
 * `kid`s, one fetch in flight, size limit and timeout, redirects refused).
 *
 * A key set is made on the client's first assertion, not at start: a partner's key server
 * being down is not a reason for the gateway not to start. `sync` takes a reloaded
 * registry: a client whose key source or algorithm changed gets a new set (its old one is
 * closed); a key file is read again on the next assertion after each reload.
 */
import { isAbsolute, resolve } from 'node:path';
import type { ClientRecord, ClientRegistry } from '../clients/clientRegistry.js';
import type { IssuerConfig } from '../config/types.js';
import { clientKeySetConfig } from '../issuers/clientKeySetConfig.js';
import { createIssuerKeySet, type IssuerKey, type IssuerKeySet } from '../issuers/issuerKeySet.js';
import type { FetchOutcome, FetchTrigger, KeySetLog } from '../issuers/remoteKeySet.js';
import type { Clock } from '../lib/clock.js';

export interface ClientKeysOptions {
  readonly clock: Clock;
  /** The clients file's directory: a relative `jwksFile` is read from there. */
  readonly baseDir: string;
  readonly clockSkewSeconds: number;
  /** Each line names the client (`client`), not the key-set code's placeholder issuer. */
  readonly log?: KeySetLog;
  /** A `jwksUri` download ended, by client id (the metrics). */
  readonly onFetch?: (clientId: string, trigger: FetchTrigger, outcome: FetchOutcome) => void;
  /** Replaces `fetch` for `jwksUri` downloads (tests). */
  readonly fetch?: typeof fetch;
}

interface Entry {
  /** `file:<path>` or `uri:<url>`, with the algorithm: a change makes a new set. */
  readonly source: string;
  readonly keys: IssuerKeySet;
  /** Resolves once a key file was read (rejects when it could not be); remote: at once. */
  readonly loaded: Promise<void>;
}

/** A client's keys could not be had (its file is unreadable or its key server unusable). */
export class ClientKeysUnavailable extends Error {}

export class ClientKeys {
  readonly #options: ClientKeysOptions;
  readonly #sets = new Map<string, Entry>();
  #registry: ClientRegistry | null = null;

  constructor(options: ClientKeysOptions) {
    this.#options = options;
  }

  /**
   * The client's key for `kid` and `alg`; null when it has none (unknown kid, another
   * alg). Throws `ClientKeysUnavailable` when its key source cannot be used now.
   */
  async keyFor(client: ClientRecord, kid: string, alg: string): Promise<IssuerKey | null> {
    const entry = this.#entryFor(client);
    if (entry === null) return null;
    try {
      await entry.loaded;
      return await entry.keys.getKey(kid, alg);
    } catch (error) {
      throw new ClientKeysUnavailable((error as Error).message, { cause: error });
    }
  }

  /** Takes the current registry: after a reload, drops the sets whose client or source changed. */
  sync(registry: ClientRegistry): void {
    if (registry === this.#registry) return;
    this.#registry = registry;
    for (const [id, entry] of this.#sets) {
      const client = registry.get(id);
      const keep =
        client !== undefined &&
        entry.source === sourceOf(client) &&
        entry.source.startsWith('uri:');
      if (!keep) {
        entry.keys.close();
        this.#sets.delete(id);
      }
    }
  }

  close(): void {
    for (const entry of this.#sets.values()) entry.keys.close();
    this.#sets.clear();
  }

  #entryFor(client: ClientRecord): Entry | null {
    const source = sourceOf(client);
    if (source === null) return null;
    const existing = this.#sets.get(client.id);
    if (existing !== undefined && existing.source === source) return existing;
    existing?.keys.close();
    const { log, onFetch } = this.#options;
    const clientId = client.id;
    const keys = createIssuerKeySet(this.#issuerConfig(client), {
      clock: this.#options.clock,
      ...(log === undefined
        ? {}
        : {
            log: (event, { issuer: _placeholder, ...detail }) =>
              log(event, { client: clientId, ...detail }),
          }),
      ...(onFetch === undefined
        ? {}
        : { hooks: { fetch: (_id, trigger, outcome) => onFetch(clientId, trigger, outcome) } }),
      ...(this.#options.fetch === undefined ? {} : { fetch: this.#options.fetch }),
    });
    const loaded = keys.load();
    loaded.catch(() => undefined);
    keys.start();
    const entry = { source, keys, loaded };
    this.#sets.set(client.id, entry);
    return entry;
  }

  /** The key-set settings of a client: those of a trusted issuer, with the client's key source. */
  #issuerConfig(client: ClientRecord): IssuerConfig {
    const file = client.jwksFile;
    return clientKeySetConfig({
      issuer: client.id,
      jwksUri: client.jwksUri,
      keyFile:
        file === null ? null : isAbsolute(file) ? file : resolve(this.#options.baseDir, file),
      algorithm: client.assertionAlg,
      clockSkewSeconds: this.#options.clockSkewSeconds,
    });
  }
}

function sourceOf(client: ClientRecord): string | null {
  if (client.jwksUri !== null) return `uri:${client.assertionAlg}:${client.jwksUri}`;
  if (client.jwksFile !== null) return `file:${client.assertionAlg}:${client.jwksFile}`;
  return null;
}
