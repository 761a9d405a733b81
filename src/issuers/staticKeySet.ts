/**
 * A trusted external issuer's keys read from a local `keyFile` instead of a JWKS URI: a
 * JWK Set (RFC 7517 §5) or PEM public keys, a PEM key named by its RFC 7638 thumbprint
 * with its `alg` following from the key. A bad file is a `ConfigError` and keeps the
 * previous keys; a loaded file never goes stale.
 *
 * A JWK Set's keys follow the rules of a fetched set (`issuerJwks.ts`); a PEM file holds
 * `PUBLIC KEY` (SPKI) blocks only, any other block (a private key, a certificate) is
 * refused. A PEM key's `alg`: P-256 → ES256, P-384 → ES384, Ed25519 → EdDSA, RSA → RS256
 * (PS256 when the issuer allows PS256 and not RS256). Keys skipped in an otherwise usable
 * file are logged. Before the first load `getKey` throws 503 `issuer-unavailable`
 * (`issuer-keys-missing`).
 */
import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { ConfigError } from '../config/configError.js';
import type { IssuerConfig } from '../config/types.js';
import { type IssuerKey, importJwks, skippedSummary } from './issuerJwks.js';
import { type IssuerKeySetState, type KeySetLog, keysUnavailable } from './remoteKeySet.js';

export interface StaticKeySetDeps {
  readonly log?: KeySetLog;
  /** Position in `issuers` for configuration-error paths (`issuers[2].keyFile`). */
  readonly index?: number;
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([A-Za-z0-9+/=\s]*?)-----END \1-----/g;

export class StaticKeySet {
  readonly #config: IssuerConfig;
  readonly #path: string;
  /** Where the file is named in the config (`issuers[<i>].keyFile`), for problems. */
  readonly #configPath: string;
  readonly #log: KeySetLog | undefined;
  #keys: ReadonlyMap<string, IssuerKey> | null = null;
  #lastError: string | null = null;
  #loads = 0;
  #applied = 0;
  #markReady!: () => void;
  readonly #ready = new Promise<void>((resolve) => {
    this.#markReady = resolve;
  });

  constructor(config: IssuerConfig, deps: StaticKeySetDeps = {}) {
    if (config.keyFile === null) throw new Error(`issuer ${config.id} has no keyFile`);
    this.#config = config;
    this.#path = config.keyFile;
    this.#configPath = `issuers[${deps.index ?? `id=${config.id}`}].keyFile`;
    this.#log = deps.log;
  }

  async load(): Promise<void> {
    const seq = ++this.#loads;
    let keys: Map<string, IssuerKey>;
    try {
      keys = await this.#read();
    } catch (error) {
      if (error instanceof ConfigError && seq > this.#applied) {
        this.#lastError = error.problems.join('; ');
        this.#log?.('issuer key file refused', {
          issuer: this.#config.id,
          problems: error.problems,
        });
      }
      throw error;
    }
    if (seq <= this.#applied) return;
    this.#applied = seq;
    this.#keys = keys;
    this.#lastError = null;
    this.#log?.('issuer key file loaded', { issuer: this.#config.id, keys: keys.size });
    this.#markReady();
  }

  reload(): Promise<void> {
    return this.load();
  }

  start(): void {
    if (this.#keys === null && this.#loads === 0) this.load().catch(() => undefined);
  }

  ready(): Promise<void> {
    return this.#ready;
  }

  state(): IssuerKeySetState {
    return {
      usable: this.#keys !== null,
      // A file never goes stale; an age growing from its last change would trip the
      // key-set staleness alert meant for fetched sets.
      ageSeconds: null,
      keys: this.#keys?.size ?? 0,
      lastError: this.#lastError,
    };
  }

  close(): void {}

  getKey(kid: string, alg: string): IssuerKey | null {
    if (this.#keys === null) throw keysUnavailable('issuer-keys-missing');
    const key = this.#keys.get(kid);
    return key !== undefined && key.alg === alg ? key : null;
  }

  async #read(): Promise<Map<string, IssuerKey>> {
    const fail = (problems: string[]) =>
      new ConfigError(
        problems.map((p) => `${this.#configPath}: ${p}`),
        `${this.#configPath} (${this.#path})`,
      );
    let text: string;
    try {
      text = await readFile(this.#path, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      throw fail([`cannot read ${this.#path} (${code})`]);
    }
    let document: unknown;
    if (text.includes('-----BEGIN')) {
      const problems: string[] = [];
      document = await pemToJwks(text, this.#config.algorithms, problems);
      if (problems.length > 0) throw fail(problems);
    } else {
      try {
        document = JSON.parse(text);
      } catch {
        throw fail(['is neither a JWK Set (JSON) nor PEM public keys']);
      }
    }
    const imported = await importJwks(document, this.#config.algorithms);
    if (imported === null) throw fail(['is not a JSON object with a "keys" array']);
    if (imported.keys.size === 0) {
      const { count, keys } = skippedSummary(imported.skipped);
      const more = count > keys.length ? [`… and ${count - keys.length} more`] : [];
      throw fail(['holds no usable key', ...keys, ...more]);
    }
    if (imported.skipped.length > 0) {
      this.#log?.('issuer keys skipped', {
        issuer: this.#config.id,
        ...skippedSummary(imported.skipped),
      });
    }
    return imported.keys;
  }
}

/** PEM public keys → a JWK Set whose kids are RFC 7638 thumbprints; problems collected. */
async function pemToJwks(
  text: string,
  algorithms: readonly string[],
  problems: string[],
): Promise<{ keys: JsonWebKey[] }> {
  const keys: JsonWebKey[] = [];
  const blocks = [...text.matchAll(PEM_BLOCK)];
  if (blocks.length === 0) problems.push('holds no complete PEM block');
  for (const [i, block] of blocks.entries()) {
    if (block[1] !== 'PUBLIC KEY') {
      problems.push(`keys[${i}]: "${block[1]}" is not a PUBLIC KEY block`);
      continue;
    }
    let jwk: JsonWebKey;
    try {
      jwk = createPublicKey(block[0]).export({ format: 'jwk' });
    } catch (error) {
      problems.push(`keys[${i}]: not a valid public key (${(error as Error).message})`);
      continue;
    }
    const kid = await calculateJwkThumbprint(jwk as JWK, 'sha256');
    const rsaAlg =
      !algorithms.includes('RS256') && algorithms.includes('PS256') ? 'PS256' : 'RS256';
    keys.push({ ...jwk, kid, ...(jwk.kty === 'RSA' ? { alg: rsaAlg } : {}) });
  }
  return { keys };
}
