/**
 * A DPoP proof (RFC 9449 §4.2), checked the way §4.3 lists it, every ambiguous form
 * refused before any cryptography runs:
 *   - one compact JWS of bounded size, its header `typ: dpop+jwt` (§4.2), an asymmetric
 *     `alg` of the allowlist (never `none`, never HMAC), a `jwk` that is a public key only
 *     (no private member: a proof carrying its private key proves nothing);
 *   - the signature verifies with that `jwk` (the key that signed is the key named);
 *   - `htm` is the request's method, `htu` its URI without query and fragment (§4.3 items
 *     9–10), compared after the RFC 3986 §6.2.2 normalisations (scheme and host case,
 *     the default port);
 *   - `iat` within the window around now (§11.1), `jti` present (its single use is the
 *     replay store's, `proofReplay.ts`);
 *   - with an access token (at a resource, §7.1), `ath` is its SHA-256 (base64url);
 *   - with server nonces on, `nonce` is one of ours (§8).
 * The result is the key's RFC 7638 thumbprint (`jkt`, what `cnf` binds) and the `jti`.
 *
 * A client signs its proofs with one key (the header's `jwk`, §4.2): the header's `alg`,
 * the imported key and its thumbprint are kept in a bounded cache keyed by the proof's raw
 * protected-header segment — the exact `typ`, `alg` and `jwk` the signature covers,
 * nothing volatile (the claims vary, the header does not) — and only after that header
 * passed every check and its key verified a proof. A hit skips decoding the header again
 * (only the `alg` allowlist, which a reload changes, is asked again); a header differing
 * by one byte is another entry, never the cached key.
 *
 * The checks before the signature are the token verifier's (`tokenVerifier.ts`): the one
 * canonical base64url spelling of each part (`compactJws.ts`), `alg` fitting the key's
 * type and size (`signatureParameters.ts`: the curve, RSA of 2048 bits or more), the
 * signature's length for the key (`signatureLength.ts`); then Node's synchronous
 * `crypto.verify` (`jwsSignature.ts`), where jose's `compactVerify` went through WebCrypto
 * on the thread pool at about twice the CPU (bench/RESULTS.md). The check is synchronous:
 * the step waits only for a replay store that does.
 */
import { createPublicKey, hash, type KeyObject } from 'node:crypto';
import { signatureParameters } from '../keys/signatureParameters.js';
import { assertCompactJws, base64urlLength, signatureSegmentLength } from './compactJws.js';
import { verifyJwsSignature } from './jwsSignature.js';
import { signatureLength } from './signatureLength.js';

/** The asymmetric algorithms a proof may use (RFC 9449 §4.2: no symmetric, no `none`). */
export const DPOP_ALGORITHMS = ['ES256', 'ES384', 'EdDSA', 'PS256', 'RS256'] as const;
export type DpopAlgorithm = (typeof DPOP_ALGORITHMS)[number];

/** A proof is a few hundred bytes (an RSA key makes it ~1.5 KiB): anything larger is refused unread. */
export const MAX_PROOF_LENGTH = 4096;

/** Private members of any key type (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

export type DpopProofReason =
  | 'dpop-malformed'
  | 'dpop-typ'
  | 'dpop-alg'
  | 'dpop-jwk'
  | 'dpop-signature'
  | 'dpop-htm'
  | 'dpop-htu'
  | 'dpop-iat'
  | 'dpop-jti'
  | 'dpop-ath'
  | 'dpop-nonce';

export class DpopProofError extends Error {
  readonly reason: DpopProofReason;
  constructor(reason: DpopProofReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

export interface ProofExpectation {
  readonly method: string;
  /** The request's URI as received, scheme and host per the trusted-proxy rules. */
  readonly url: string;
  /** Epoch seconds. */
  readonly now: number;
  /** How far `iat` may be from now, each way, in seconds. */
  readonly windowSeconds: number;
  readonly algorithms: readonly DpopAlgorithm[];
  /** At a resource: the access token the proof must name (`ath`). */
  readonly accessToken?: string;
  /** With server nonces: whether `nonce` is one the server issued and still accepts. */
  readonly nonceValid?: (nonce: string) => boolean;
}

export interface CheckedProof {
  /** RFC 7638 SHA-256 thumbprint of the proof's key (`cnf.jkt`). */
  readonly jkt: string;
  readonly jti: string;
  readonly iat: number;
}

/** Proof keys kept per process: far more clients than one gateway sees at once. */
export const PROOF_KEY_CACHE_SIZE = 1000;

/** A proof header's key, checked fit for its `alg`, and the key's RFC 7638 thumbprint. */
interface ProofKey extends CheckedHeader {
  /** Null: the key stands for it. */
  readonly jwk: null;
  readonly key: KeyObject;
  readonly jkt: string;
}

/**
 * Keys of proofs that verified, by raw protected-header segment (at most MAX_PROOF_LENGTH
 * characters), bounded by count: a hit moves the entry last, a new entry in a full cache
 * drops the first (least recently used; a Map iterates in insertion order).
 */
export class ProofKeyCache {
  readonly #entries = new Map<string, ProofKey>();
  readonly #capacity: number;

  constructor(capacity = PROOF_KEY_CACHE_SIZE) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError('capacity must be a positive integer');
    }
    this.#capacity = capacity;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(header: string): ProofKey | undefined {
    const key = this.#entries.get(header);
    if (key !== undefined) {
      this.#entries.delete(header);
      this.#entries.set(header, key);
    }
    return key;
  }

  set(header: string, key: ProofKey): void {
    this.#entries.delete(header);
    if (this.#entries.size >= this.#capacity) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(header, key);
  }
}

const processProofKeys = new ProofKeyCache();

export function checkDpopProof(
  proof: string,
  expect: ProofExpectation,
  keys: ProofKeyCache = processProofKeys,
): CheckedProof {
  if (proof.length > MAX_PROOF_LENGTH) {
    throw new DpopProofError('dpop-malformed', 'The DPoP proof is not a compact JWS.');
  }
  try {
    // One spelling per proof (RFC 7515 §7.1, RFC 4648 §3.5), as for access tokens.
    assertCompactJws(proof);
  } catch {
    throw new DpopProofError('dpop-malformed', 'The DPoP proof is not a compact JWS.');
  }
  const firstDot = proof.indexOf('.');
  const headerPart = proof.slice(0, firstDot);
  // A header seen before passed every header check and verified a proof: only the
  // allowlist (configuration, which a reload changes) is asked again.
  const cached = keys.get(headerPart);
  const header =
    cached === undefined ? checkedHeader(headerPart, expect.algorithms) : allowed(cached, expect);
  const key = cached?.key ?? importProofKey(header.jwk as Record<string, unknown>, header.alg);
  // Any other length is another spelling of the signature or none (`signatureLength.ts`).
  if (signatureSegmentLength(proof) !== base64urlLength(signatureLength(header.alg, key))) {
    throw new DpopProofError('dpop-signature', 'The DPoP proof signature does not verify.');
  }
  if (!verifyJwsSignature(proof, header.alg, key)) {
    throw new DpopProofError('dpop-signature', 'The DPoP proof signature does not verify.');
  }
  let jkt = cached?.jkt;
  if (jkt === undefined) {
    jkt = jwkThumbprint(header.jwk as Record<string, unknown>);
    keys.set(headerPart, { alg: header.alg, jwk: null, key, jkt });
  }
  const payload = Buffer.from(proof.slice(firstDot + 1, proof.lastIndexOf('.')), 'base64url');
  const claims = jsonText(payload.toString('utf8'));
  if (claims.htm !== expect.method) {
    throw new DpopProofError('dpop-htm', 'The DPoP proof is for another method.');
  }
  const htu = claims.htu;
  if (
    typeof htu !== 'string' ||
    (htu !== expect.url && normalisedUri(htu) !== normalisedUri(expect.url))
  ) {
    throw new DpopProofError('dpop-htu', 'The DPoP proof is for another URI.');
  }
  const iat = claims.iat;
  if (
    typeof iat !== 'number' ||
    !Number.isFinite(iat) ||
    Math.abs(iat - expect.now) > expect.windowSeconds
  ) {
    throw new DpopProofError('dpop-iat', 'The DPoP proof was not made just now (iat).');
  }
  const jti = claims.jti;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256) {
    throw new DpopProofError('dpop-jti', 'The DPoP proof needs a jti.');
  }
  if (expect.accessToken !== undefined && claims.ath !== accessTokenHash(expect.accessToken)) {
    throw new DpopProofError('dpop-ath', 'The DPoP proof is for another access token (ath).');
  }
  if (expect.nonceValid !== undefined) {
    const nonce = claims.nonce;
    if (typeof nonce !== 'string' || !expect.nonceValid(nonce)) {
      throw new DpopProofError('dpop-nonce', 'The DPoP proof must carry a current server nonce.');
    }
  }
  return { jkt, jti, iat };
}

/** A protected header's `alg` and `jwk` (null once cached: its key stands for it). */
interface CheckedHeader {
  readonly alg: string;
  readonly jwk: object | null;
}

/** A cached header's `alg`, still of the allowlist. */
function allowed(cached: ProofKey, expect: ProofExpectation): CheckedHeader {
  if (!(expect.algorithms as readonly string[]).includes(cached.alg)) {
    throw new DpopProofError('dpop-alg', 'The DPoP proof uses an algorithm not accepted here.');
  }
  return cached;
}

/**
 * The checks of a protected header not seen before (RFC 9449 §4.3 items 3–6): typed
 * `dpop+jwt`, an `alg` of the allowlist, no `crit`, a `jwk` holding no private member.
 */
function checkedHeader(headerPart: string, algorithms: readonly string[]): CheckedHeader {
  const header = jsonPart(headerPart);
  if (header.typ !== 'dpop+jwt') {
    throw new DpopProofError('dpop-typ', 'The DPoP proof must be typed dpop+jwt.');
  }
  const alg = header.alg;
  if (typeof alg !== 'string' || !algorithms.includes(alg)) {
    throw new DpopProofError('dpop-alg', 'The DPoP proof uses an algorithm not accepted here.');
  }
  // No extension is understood in a proof, so any `crit` is one we must refuse
  // (RFC 7515 §4.1.11); jose accepted `crit: ["b64"]`.
  if (Object.hasOwn(header, 'crit')) {
    throw new DpopProofError(
      'dpop-malformed',
      'The DPoP proof uses an unsupported feature (crit).',
    );
  }
  const jwk = header.jwk;
  if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk)) {
    throw new DpopProofError('dpop-jwk', 'The DPoP proof carries no public key (jwk).');
  }
  for (const member of PRIVATE_MEMBERS) {
    if (member in jwk) throw new DpopProofError('dpop-jwk', 'The DPoP proof key must be public.');
  }
  return { alg, jwk };
}

/**
 * The header's `jwk` as a public KeyObject fit for `alg`: a key Node cannot read (a point
 * off the curve, a member missing) is one that cannot have signed (dpop-signature, as
 * jose's import was); a key of another type or size than `alg` names (an RSA key for
 * ES256, RSA under 2048 bits, RFC 7518 §3.3) is refused as dpop-alg.
 */
function importProofKey(jwk: Record<string, unknown>, alg: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey({ key: jwk as never, format: 'jwk' });
  } catch {
    throw new DpopProofError('dpop-signature', 'The DPoP proof signature does not verify.');
  }
  try {
    signatureParameters(alg, key);
  } catch {
    throw new DpopProofError('dpop-alg', 'The DPoP proof key does not fit its algorithm.');
  }
  return key;
}

/** The members RFC 7638 §3.2 hashes, by key type, in lexicographic order. */
const THUMBPRINT_MEMBERS: Readonly<Record<string, readonly string[]>> = {
  EC: ['crv', 'kty', 'x', 'y'],
  OKP: ['crv', 'kty', 'x'],
  RSA: ['e', 'kty', 'n'],
};

/**
 * RFC 7638 SHA-256 thumbprint: the required members only, in lexicographic order, no
 * whitespace (§3.1, §3.3), as jose's `calculateJwkThumbprint`. The key was read from
 * these members, so they are strings.
 */
function jwkThumbprint(jwk: Record<string, unknown>): string {
  const members = THUMBPRINT_MEMBERS[jwk.kty as string] ?? [];
  const required: Record<string, unknown> = {};
  for (const member of members) required[member] = jwk[member];
  if (members.length === 0 || members.some((member) => typeof jwk[member] !== 'string')) {
    throw new DpopProofError('dpop-jwk', 'The DPoP proof key is not a complete JWK.');
  }
  return hash('sha256', JSON.stringify(required), 'base64url');
}

/** `ath` (RFC 9449 §4.2): base64url of the SHA-256 of the access token's ASCII. */
export function accessTokenHash(token: string): string {
  // The one-shot hash (UTF-8 of the string): a token that verified is ASCII.
  return hash('sha256', token, 'base64url');
}

/**
 * A URI without query and fragment, scheme and host lower case, the scheme's default port
 * dropped (RFC 9449 §4.3 item 10, RFC 3986 §6.2.2–6.2.3); '' when it is not an http(s) URL.
 * The path is compared as written: a proof is made for the URI the client sent.
 */
export function normalisedUri(uri: string): string {
  const match = /^(https?):\/\/([^/?#]*)([^?#]*)/i.exec(uri);
  if (match === null) return '';
  const scheme = (match[1] as string).toLowerCase();
  let authority = (match[2] as string).toLowerCase();
  if (authority.includes('@') || authority === '') return '';
  const defaultPort = scheme === 'https' ? ':443' : ':80';
  if (authority.endsWith(defaultPort)) authority = authority.slice(0, -defaultPort.length);
  const path = match[3] === '' ? '/' : (match[3] as string);
  return `${scheme}://${authority}${path}`;
}

function jsonPart(part: string): Record<string, unknown> {
  return jsonText(Buffer.from(part, 'base64url').toString('utf8'));
}

function jsonText(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DpopProofError('dpop-malformed', 'The DPoP proof is not JSON.');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new DpopProofError('dpop-malformed', 'The DPoP proof is not a JSON object.');
  }
  return value as Record<string, unknown>;
}
