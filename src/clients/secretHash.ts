/**
 * Client-secret hash formats, as stored in the clients file.
 *
 * - `sha256:<b64url digest>` for secrets the CLI generates: 256 random bits need no
 *   stretching, a single SHA-256 is as hard to invert as guessing the secret.
 * - `scrypt:<N>:<r>:<p>:<salt b64url>:<hash b64url>` for operator-chosen secrets, which
 *   may be guessable and so get a memory-hard KDF (RFC 7914).
 *
 * Parsing is strict (canonical base64url, bounded parameters) so a typo in the file is
 * a start-up error, never a hash that silently matches nothing or costs unbounded work.
 * Comparison is `timingSafeEqual` over digests of equal, fixed length.
 */
import {
  hash as digestOf,
  randomBytes,
  scrypt as scryptCallback,
  timingSafeEqual,
} from 'node:crypto';

export type ParsedHash =
  | { readonly scheme: 'sha256'; readonly digest: Buffer }
  | {
      readonly scheme: 'scrypt';
      readonly N: number;
      readonly r: number;
      readonly p: number;
      readonly salt: Buffer;
      readonly digest: Buffer;
    };

/** Parameters used for new scrypt hashes (and for the authenticator's dummy hash). */
export const SCRYPT_DEFAULTS = { N: 16384, r: 8, p: 1, saltBytes: 16, keyBytes: 32 } as const;

/** Accepted ranges: wide enough for stronger settings, bounded so a hash cannot cost unbounded memory. */
const N_MIN = 1024;
const N_MAX = 1_048_576;
const R_MAX = 32;
const P_MAX = 16;
const MAX_MEMORY = 256 * 1024 * 1024;
const SALT_MIN = 16;
const SALT_MAX = 64;
const KEY_MIN = 32;
const KEY_MAX = 64;

const B64URL = /^[A-Za-z0-9_-]+$/;
const DECIMAL = /^[1-9][0-9]{0,9}$/;

/** A new client secret: 32 random bytes, base64url (43 characters, 256 bits). */
export function generateSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function hashGeneratedSecret(secret: string): string {
  return `sha256:${sha256(secret).toString('base64url')}`;
}

export async function hashChosenSecret(secret: string): Promise<string> {
  const { N, r, p, saltBytes, keyBytes } = SCRYPT_DEFAULTS;
  const salt = randomBytes(saltBytes);
  const digest = await scrypt(secret, salt, keyBytes, N, r, p);
  return `scrypt:${N}:${r}:${p}:${salt.toString('base64url')}:${digest.toString('base64url')}`;
}

/** Parses a stored hash; null when the text is not exactly one of the two formats. */
export function parseSecretHash(text: string): ParsedHash | null {
  if (typeof text !== 'string') return null;
  const parts = text.split(':');
  if (parts[0] === 'sha256' && parts.length === 2) {
    const digest = decodeB64url(parts[1]);
    return digest !== null && digest.length === 32 ? { scheme: 'sha256', digest } : null;
  }
  if (parts[0] === 'scrypt' && parts.length === 6) {
    const [, nText, rText, pText, saltText, hashText] = parts;
    const N = decodeInt(nText);
    const r = decodeInt(rText);
    const p = decodeInt(pText);
    const salt = decodeB64url(saltText);
    const digest = decodeB64url(hashText);
    if (N === null || r === null || p === null || salt === null || digest === null) return null;
    // N must be a power of two (RFC 7914 §2).
    if (N < N_MIN || N > N_MAX || (N & (N - 1)) !== 0) return null;
    if (r > R_MAX || p > P_MAX || scryptMemory(N, r) > MAX_MEMORY) return null;
    if (salt.length < SALT_MIN || salt.length > SALT_MAX) return null;
    if (digest.length < KEY_MIN || digest.length > KEY_MAX) return null;
    return { scheme: 'scrypt', N, r, p, salt, digest };
  }
  return null;
}

/** True when `secret` hashes to `hash`. Work depends on the hash's scheme, not on the secret. */
export async function verifySecret(secret: string, hash: ParsedHash): Promise<boolean> {
  return checkSecret(secret, hash);
}

/**
 * `verifySecret`, answered at once for a `sha256` hash (a synchronous digest) and as a
 * promise for `scrypt` (the thread pool's work): the token operation's path takes no
 * promise for a sha256 client.
 */
export function checkSecret(secret: string, hash: ParsedHash): boolean | Promise<boolean> {
  // Both sides have the hash's digest length by construction.
  if (hash.scheme === 'sha256') return timingSafeEqual(sha256(secret), hash.digest);
  return scrypt(secret, hash.salt, hash.digest.length, hash.N, hash.r, hash.p).then((computed) =>
    timingSafeEqual(computed, hash.digest),
  );
}

/** One-shot digest: no Hash object per call. */
function sha256(secret: string): Buffer {
  return digestOf('sha256', secret, 'buffer');
}

function scryptMemory(N: number, r: number): number {
  return 128 * N * r;
}

function scrypt(
  secret: string,
  salt: Buffer,
  keyBytes: number,
  N: number,
  r: number,
  p: number,
): Promise<Buffer> {
  const maxmem = scryptMemory(N, r) * 2 + 1024 * 1024;
  return new Promise((resolve, reject) => {
    scryptCallback(secret, salt, keyBytes, { N, r, p, maxmem }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

function decodeB64url(text: string | undefined): Buffer | null {
  if (text === undefined || !B64URL.test(text)) return null;
  const bytes = Buffer.from(text, 'base64url');
  // Canonical only: rejects trailing bits that Buffer would silently drop.
  return bytes.toString('base64url') === text ? bytes : null;
}

function decodeInt(text: string | undefined): number | null {
  return text !== undefined && DECIMAL.test(text) ? Number(text) : null;
}
