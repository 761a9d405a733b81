/**
 * The one spelling of a compact JWS (RFC 7515 §7.1): three segments of base64url without
 * padding (§2), each as a compliant encoder writes it (RFC 4648 §3.5: the bits of the
 * last character that encode nothing are zero; no length of 1 mod 4, which no octet
 * count encodes to). A lenient decoder (ours, jose's, most upstreams') reads the other
 * spellings as the same octets, so one signed token would be 16 tokens to anything keyed
 * on its text — the verified-token cache, an upstream's cache, a deny list. Refused here,
 * before any decoding or cryptography; the signature's length for the algorithm and key
 * is checked once the key is known (`signatureLength.ts`).
 *
 * Runs on a verified-token cache miss only: a cached token passed it when it was verified.
 */
import { invalid } from './invalidToken.js';

/** Three base64url segments, no padding (RFC 7515 §2, §7.1). */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Each base64url character's 6-bit value, by character code (RFC 4648 §5). */
const VALUES = new Uint8Array(128);
for (let i = 0; i < ALPHABET.length; i++) VALUES[ALPHABET.charCodeAt(i)] = i;

/**
 * True when `text[start, end)` (base64url characters only) is canonical: its length is
 * not 1 mod 4, and the unused low bits of its last character are zero — 4 of them after
 * one octet in the last group (length 2 mod 4), 2 after two octets (3 mod 4).
 */
function isCanonical(text: string, start: number, end: number): boolean {
  const last = VALUES[text.charCodeAt(end - 1)] as number;
  switch ((end - start) & 3) {
    case 0:
      return true;
    case 2:
      return (last & 0x0f) === 0;
    case 3:
      return (last & 0x03) === 0;
    default:
      return false;
  }
}

/**
 * Throws token-invalid unless `token` is a compact JWS (reason `malformed`) in canonical
 * base64url (reason `non-canonical`). Cost: one pattern match and three table lookups.
 */
export function assertCompactJws(token: string): void {
  if (!COMPACT_JWS.test(token)) {
    throw invalid('malformed', 'The access token is not a compact JWT.');
  }
  const first = token.indexOf('.');
  const second = token.indexOf('.', first + 1);
  if (
    !isCanonical(token, 0, first) ||
    !isCanonical(token, first + 1, second) ||
    !isCanonical(token, second + 1, token.length)
  ) {
    throw invalid('non-canonical', 'The access token is not in canonical base64url encoding.');
  }
}

/** The 6-bit value of a base64url character code (RFC 4648 §5); 0 for any other code. */
export function base64urlValue(code: number): number {
  return VALUES[code] ?? 0;
}

/** Characters of the unpadded base64url encoding of `octets` octets (RFC 7515 §2). */
export function base64urlLength(octets: number): number {
  return Math.ceil((octets * 4) / 3);
}

/** Characters of the token's signature segment (the token passed `assertCompactJws`). */
export function signatureSegmentLength(token: string): number {
  return token.length - token.lastIndexOf('.') - 1;
}
