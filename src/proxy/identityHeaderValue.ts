/**
 * How a claim's text travels in an identity header (`X-Client-Id`, `X-Token-Scope`, …).
 *
 * A field value is visible ASCII, spaces and tabs inside (RFC 9110 §5.5); bytes above
 * 0x7F are obsolete there and read as Latin-1 by many parsers, and leading or trailing
 * whitespace is trimmed. Claims (client ids above all) are any Unicode text, so:
 *
 * - visible ASCII other than `%`, and a space that is neither first nor last, go as is;
 * - every other byte of the text's UTF-8 form is percent-encoded as `%XX` (uppercase hex,
 *   RFC 3986 §2.1): `%` itself, controls, tabs, a leading or trailing space and every
 *   byte of a non-ASCII character.
 *
 * Because `%` is always encoded, the value is unambiguous: a value without `%` is the
 * claim exactly (so a plain ASCII id is sent unchanged), and percent-decoding as UTF-8
 * (`decodeURIComponent`; not form decoding, `+` is a plus) always gives the claim back.
 * Text with a lone surrogate has no UTF-8 form: no value (the header is not set).
 */

/** The header value for `text`, or undefined when the text has no UTF-8 form. */
export function identityHeaderValue(text: string): string | undefined {
  const last = text.length - 1;
  for (let i = 0; i <= last; i++) {
    const c = text.charCodeAt(i);
    if (!isPlain(c, i === 0 || i === last)) return encodeFrom(text, i);
  }
  return text;
}

function isPlain(c: number, edge: boolean): boolean {
  return (c > 0x20 && c < 0x7f && c !== 0x25) || (c === 0x20 && !edge);
}

const HEX = '0123456789ABCDEF';

function percent(byte: number): string {
  return `%${HEX[byte >> 4]}${HEX[byte & 0x0f]}`;
}

/** The slow path: `text[0, start)` is plain; encodes the rest. */
function encodeFrom(text: string, start: number): string | undefined {
  const last = text.length - 1;
  let out = text.slice(0, start);
  for (let i = start; i <= last; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      out += isPlain(c, i === 0 || i === last) ? text[i] : percent(c);
    } else if (c < 0x800) {
      out += percent(0xc0 | (c >> 6)) + percent(0x80 | (c & 0x3f));
    } else if (c >= 0xd800 && c <= 0xdbff) {
      const low = text.charCodeAt(i + 1);
      if (!(low >= 0xdc00 && low <= 0xdfff)) return undefined;
      const cp = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
      out +=
        percent(0xf0 | (cp >> 18)) +
        percent(0x80 | ((cp >> 12) & 0x3f)) +
        percent(0x80 | ((cp >> 6) & 0x3f)) +
        percent(0x80 | (cp & 0x3f));
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return undefined;
    } else {
      out +=
        percent(0xe0 | (c >> 12)) + percent(0x80 | ((c >> 6) & 0x3f)) + percent(0x80 | (c & 0x3f));
    }
  }
  return out;
}
