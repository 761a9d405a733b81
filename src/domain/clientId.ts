/**
 * What a client id is: any Unicode text of 1 to 256 bytes in UTF-8, without control
 * characters (Unicode `Cc`: U+0000–U+001F, U+007F–U+009F) or lone surrogates (a string
 * with one has no UTF-8 form, so it could not be stored, sent or compared as bytes).
 *
 * Ids are compared byte for byte, never normalised: the NFC and NFD spellings of one
 * name are two ids. For well-formed strings, equal UTF-16 code units means equal UTF-8
 * bytes, so `===` and `Map` keys compare them exactly.
 *
 * The registry, the CLI, the admin API and the verifier all apply this one rule, so any
 * id that can be registered can be revoked, and a token naming any other id is refused.
 */

export const MAX_CLIENT_ID_BYTES = 256;

/** The rule, as errors state it. */
export const CLIENT_ID_RULE = `1 to ${MAX_CLIENT_ID_BYTES} bytes of UTF-8 without control characters or lone surrogates`;

/** True when `value` is a client id (see the header). Allocation-free: it runs per verification. */
export function isClientId(value: string): boolean {
  return clientIdFlaw(value) === null;
}

/** Why `value` is not a client id, naming the rule; null when it is one. */
export function clientIdProblem(value: unknown): string | null {
  if (typeof value !== 'string') return `must be a string of ${CLIENT_ID_RULE}`;
  const flaw = clientIdFlaw(value);
  return flaw === null ? null : `must be ${CLIENT_ID_RULE} (${flaw})`;
}

/** The first flaw of `value` as a client id, or null. */
function clientIdFlaw(value: string): string | null {
  const n = value.length;
  if (n === 0) return 'it is empty';
  // Every UTF-16 code unit is at least one UTF-8 byte.
  if (n > MAX_CLIENT_ID_BYTES) return `it takes ${utf8Length(value)} bytes`;
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x80) {
      if (c < 0x20 || c === 0x7f) return `control character ${codePoint(c)} at index ${i}`;
      bytes += 1;
    } else if (c < 0x800) {
      if (c <= 0x9f) return `control character ${codePoint(c)} at index ${i}`;
      bytes += 2;
    } else if (c >= 0xd800 && c <= 0xdbff) {
      const low = value.charCodeAt(i + 1);
      if (!(low >= 0xdc00 && low <= 0xdfff)) return `lone surrogate ${codePoint(c)} at index ${i}`;
      i++;
      bytes += 4;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return `lone surrogate ${codePoint(c)} at index ${i}`;
    } else {
      bytes += 3;
    }
  }
  return bytes > MAX_CLIENT_ID_BYTES ? `it takes ${bytes} bytes` : null;
}

function utf8Length(value: string): number {
  return Buffer.byteLength(value, 'utf8');
}

function codePoint(c: number): string {
  return `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
}
