/**
 * The signing key ring: every key in the keys directory, one of them the active signer.
 *
 * - The signer is, among the keys whose algorithm is the configured one, the key with
 *   the greatest kid. Generated kids start with a UTC timestamp
 *   (`20260101T000000Z-1a2b3c4d`), so the greatest kid is the newest key: adding a key
 *   rotates signing to it on the next start, while older keys keep verifying the tokens
 *   they signed until they are removed.
 * - Every key verifies (lookup by kid is one `Map` access).
 * - The JWKS (RFC 7517) lists the public part of every key, newest first. It is built
 *   once and frozen; only public members are copied (never d, p, q, dp, dq, qi).
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import type { SigningAlgorithm } from '../config/types.js';
import { deepFreeze } from '../lib/deepFreeze.js';

export interface LoadedKey {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly privateKey: KeyObject;
}

export interface SigningKey {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly privateKey: KeyObject;
}

export interface VerificationKey {
  readonly alg: SigningAlgorithm;
  readonly key: KeyObject;
}

/** A public JWK as published: only these members, all strings. */
export interface PublicJwk {
  readonly kty: string;
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly use: 'sig';
  readonly crv?: string;
  readonly x?: string;
  readonly y?: string;
  readonly n?: string;
  readonly e?: string;
}

export interface Jwks {
  readonly keys: readonly PublicJwk[];
}

const PUBLIC_MEMBERS = ['kty', 'crv', 'x', 'y', 'n', 'e'] as const;

export class KeyRing {
  readonly signingKey: SigningKey;
  /** Algorithms of the keys present (the verifier's allowlist for our own tokens). */
  readonly algorithms: ReadonlySet<string>;
  readonly #verification: ReadonlyMap<string, VerificationKey>;
  readonly #jwks: Jwks;

  /** Throws when kids repeat or no key has `algorithm` (`loadKeyRing` reports those as config errors). */
  constructor(keys: readonly LoadedKey[], algorithm: SigningAlgorithm) {
    const sorted = [...keys].sort((a, b) => (a.kid < b.kid ? 1 : a.kid > b.kid ? -1 : 0));
    const verification = new Map<string, VerificationKey>();
    const published: PublicJwk[] = [];
    for (const { kid, alg, privateKey } of sorted) {
      if (verification.has(kid)) throw new Error(`duplicate kid ${JSON.stringify(kid)}`);
      const key = createPublicKey(privateKey);
      verification.set(kid, Object.freeze({ alg, key }));
      published.push(publicJwk(key, kid, alg));
    }
    const signer = sorted.find((k) => k.alg === algorithm);
    if (signer === undefined) throw new Error(`no ${algorithm} key in the key ring`);
    this.signingKey = Object.freeze({
      kid: signer.kid,
      alg: signer.alg,
      privateKey: signer.privateKey,
    });
    this.algorithms = new Set<string>(sorted.map((k) => k.alg));
    this.#verification = verification;
    this.#jwks = deepFreeze({ keys: published });
    Object.freeze(this);
  }

  verificationKey(kid: string): VerificationKey | undefined {
    return this.#verification.get(kid);
  }

  /** The public key set, the same frozen object on every call. */
  jwks(): Jwks {
    return this.#jwks;
  }
}

function publicJwk(key: KeyObject, kid: string, alg: SigningAlgorithm): PublicJwk {
  const exported = key.export({ format: 'jwk' }) as Record<string, unknown>;
  const jwk: Record<string, string> = {};
  for (const member of PUBLIC_MEMBERS) {
    const value = exported[member];
    if (typeof value === 'string') jwk[member] = value;
  }
  return { ...jwk, kid, alg, use: 'sig' } as PublicJwk;
}
