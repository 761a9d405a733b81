/**
 * The JWK rules every trusted external issuer's key set follows, fetched
 * (`remoteKeySet.ts`) or read from a file (`staticKeySet.ts`).
 *
 * Each key is imported with its own `alg`, or the one its type implies (EC P-256 →
 * ES256, P-384 → ES384, OKP Ed25519 → EdDSA, RSA → RS256; PS256 only when the JWK says
 * so). Skipped, with the reason: `use` other than `sig`, `key_ops` without `verify`, a
 * missing or malformed `kid`, private members (`d`, …, and symmetric `k`: RFC 8725
 * §3.1/§3.5), an `alg` not allowed for the issuer or not matching the key type, RSA
 * under 2048 bits (RFC 8725 §3.5), a duplicate `kid`, keys beyond the first 100. Only
 * the public members are imported. Each key has one `alg`; a token must name that same
 * `alg`.
 */
import { KeyObject, type webcrypto } from 'node:crypto';
import { importJWK, type JWK } from 'jose';

/**
 * A verification key of a trusted issuer (our own key ring's keys have this shape too):
 * the one `alg` it verifies, and the key, as the KeyObject Node's synchronous
 * `crypto.verify` takes (`verify/jwsSignature.ts`).
 */
export interface IssuerKey {
  readonly alg: string;
  readonly key: KeyObject;
}

/** A key imported from an issuer's JWK Set. */
export interface ImportedKey extends IssuerKey {
  /**
   * The key's identity: its algorithm and public members, canonical. Two sets holding
   * the same kid with another `material` hold another key under that kid.
   */
  readonly material: string;
}

/** A `kid` worth looking up or fetching for (1–128 of [A-Za-z0-9._:-]). */
export const KID_SYNTAX = /^[A-Za-z0-9._:-]{1,128}$/;
const MAX_KEYS = 100;

/** The key type each accepted algorithm requires (RFC 7518 §3, RFC 8037 §3.1). */
const SHAPES: Readonly<Record<string, { kty: string; crv?: string }>> = {
  ES256: { kty: 'EC', crv: 'P-256' },
  ES384: { kty: 'EC', crv: 'P-384' },
  EdDSA: { kty: 'OKP', crv: 'Ed25519' },
  RS256: { kty: 'RSA' },
  PS256: { kty: 'RSA' },
};
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const PUBLIC_MEMBERS = ['kty', 'crv', 'x', 'y', 'n', 'e'] as const;
const MIN_RSA_BITS = 2048;

export interface ImportedKeys {
  readonly keys: Map<string, ImportedKey>;
  /** `keys[i]: why`, for the log (remote) or the configuration error (file). */
  readonly skipped: string[];
}

/** How many skipped keys a log line or problem list names (the count says the rest). */
export const SKIPPED_LISTED = 20;

/**
 * One log line's worth of skipped keys: their count and the first `SKIPPED_LISTED`
 * reasons. A key set is the issuer's (or anyone's, for a hijacked URL) to fill: a
 * 256 KiB set of 80 000 empty entries must not become 80 000 log lines per fetch.
 */
export function skippedSummary(skipped: readonly string[]): {
  readonly count: number;
  readonly keys: readonly string[];
} {
  return { count: skipped.length, keys: skipped.slice(0, SKIPPED_LISTED) };
}

/** Imports a JWK Set (RFC 7517 §5) by the rules above; null when it is not one. */
export async function importJwks(
  document: unknown,
  algorithms: readonly string[],
): Promise<ImportedKeys | null> {
  if (document === null || typeof document !== 'object') return null;
  const list = (document as { keys?: unknown }).keys;
  if (!Array.isArray(list)) return null;
  const keys = new Map<string, ImportedKey>();
  const skipped: string[] = [];
  for (const [i, entry] of list.entries()) {
    const problem =
      keys.size >= MAX_KEYS ? `more than ${MAX_KEYS} keys` : refusal(entry, algorithms);
    const jwk = entry as Record<string, unknown>;
    if (problem === null && keys.has(jwk.kid as string)) {
      skipped.push(`keys[${i}]: duplicate kid`);
      continue;
    }
    if (problem !== null) {
      skipped.push(`keys[${i}]: ${problem}`);
      continue;
    }
    const alg = algorithmOf(jwk) as string;
    const publicJwk: Record<string, unknown> = {};
    for (const member of PUBLIC_MEMBERS)
      if (jwk[member] !== undefined) publicJwk[member] = jwk[member];
    try {
      // jose checks the JWK against the algorithm; the verifier uses the key as a KeyObject.
      const key = KeyObject.from((await importJWK(publicJwk as JWK, alg)) as webcrypto.CryptoKey);
      const material = JSON.stringify([alg, publicJwk]);
      keys.set(jwk.kid as string, Object.freeze({ alg, key, material }));
    } catch (error) {
      skipped.push(`keys[${i}]: cannot be imported (${(error as Error).message})`);
    }
  }
  return { keys, skipped };
}

/** The algorithm a JWK is used with: its own `alg`, else the one its type implies. */
function algorithmOf(jwk: Record<string, unknown>): string | null {
  if (jwk.alg !== undefined) return typeof jwk.alg === 'string' ? jwk.alg : null;
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return 'ES256';
  if (jwk.kty === 'EC' && jwk.crv === 'P-384') return 'ES384';
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return 'EdDSA';
  if (jwk.kty === 'RSA') return 'RS256';
  return null;
}

/** Why a JWK is not used for verification, or null when it is. */
function refusal(entry: unknown, algorithms: readonly string[]): string | null {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return 'not an object';
  const jwk = entry as Record<string, unknown>;
  if (jwk.use !== undefined && jwk.use !== 'sig') return 'use is not "sig"';
  if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify')))
    return 'key_ops lacks "verify"';
  if (typeof jwk.kid !== 'string' || !KID_SYNTAX.test(jwk.kid)) return 'missing or malformed kid';
  if (PRIVATE_MEMBERS.some((m) => m in jwk)) return 'private or symmetric key material';
  const alg = algorithmOf(jwk);
  const shape = alg === null ? undefined : SHAPES[alg];
  if (alg === null || shape === undefined) return 'unsupported algorithm';
  if (!algorithms.includes(alg)) return `algorithm ${alg} not allowed for this issuer`;
  if (jwk.kty !== shape.kty || (shape.crv !== undefined && jwk.crv !== shape.crv))
    return `key type does not match ${alg}`;
  if (shape.kty === 'RSA' && rsaBits(jwk.n) < MIN_RSA_BITS)
    return `RSA modulus under ${MIN_RSA_BITS} bits`;
  return null;
}

function rsaBits(n: unknown): number {
  if (typeof n !== 'string') return 0;
  const bytes = Buffer.from(n, 'base64url');
  let i = 0;
  while (i < bytes.length && bytes[i] === 0) i++;
  const first = bytes[i];
  return first === undefined ? 0 : (bytes.length - i - 1) * 8 + (32 - Math.clz32(first));
}
