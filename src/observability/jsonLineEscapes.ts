/**
 * What `JSON.stringify` leaves raw and a log reader must not see raw: DEL and the C1
 * controls (U+007F–U+009F: NEL ends a line for Unicode-aware readers, CSI starts a
 * terminal control sequence) and U+2028/U+2029 (line and paragraph separators, line ends
 * in JavaScript and many viewers). JSON may escape any character (RFC 8259 §7), so the
 * line parses to the same values.
 */

const RAW = /[\u007f-\u009f\u2028\u2029]/g;
const HAS_RAW = /[\u007f-\u009f\u2028\u2029]/;

/** Serialised JSON with those characters as `\uXXXX` (itself when it has none). */
export function escapeForReaders(json: string): string {
  if (!HAS_RAW.test(json)) return json;
  return json.replace(RAW, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** True for a UTF-16 unit `escapeForReaders` writes as a six-byte `\uXXXX`. */
export function escapedForReaders(unit: number): boolean {
  return (unit >= 0x7f && unit <= 0x9f) || unit === 0x2028 || unit === 0x2029;
}
