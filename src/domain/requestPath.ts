/**
 * The request target, checked once at the edge so that routing, scope checks and the
 * upstream all see the same path. Only origin-form is accepted (RFC 9112 §3.2.1), and the
 * path is returned as received, never decoded or normalised: every path that two parsers
 * could read differently is refused instead (400):
 *
 *   - `//`, `.` and `..` segments (RFC 3986 §5.2.4; also `..;`, which is `..` to Tomcat),
 *     and any `;` (§3.3 path parameters, which Tomcat and Spring strip before routing);
 *   - percent-encoded `.` `/` `\` `?` `#`, NUL and other controls, and encoded unreserved
 *     characters (§2.3, §6.2.2.2: `/v1/%6frders` is `/v1/orders` to an upstream that
 *     decodes before routing); any of these double-encoded (`%252e`, `%2572`), `%2525`;
 *   - a raw `\`, `#`, control, space or non-ASCII character; malformed percent-encoding;
 *     encoded bytes that are not UTF-8 (RFC 3629: `%C0%AE` is `.` to a lenient decoder)
 *     or that NFKC changes, an unusual space, a format or other default-ignorable code
 *     point (`/v1%EF%BC%8Freports` is `/v1/reports` after normalisation);
 *   - a segment ending in `.` or an encoded space, a `:$` stream marker, a segment shaped
 *     like an 8.3 short name (`REPORT~1`): Windows and IIS resolve them to another path;
 *   - encoded non-ASCII letters whose case change is ASCII (`ı` → `I`).
 *
 * The query passes as is, but for raw controls and `#`. The path keeps its case; route
 * prefixes compare ignoring ASCII case (`proxy/routeTable.ts`), the open paths exactly.
 */
import { type FailureReason, PortariaError } from '../errors.js';

export const TOKEN_PATH = '/v1/authentication/accesstoken';

export interface RequestTarget {
  /** The path, exactly as received (no decoding). */
  readonly path: string;
  /** The query including its leading `?`, or `''`. */
  readonly search: string;
}

const SLASH = 0x2f;
const DOT = 0x2e;
const SEMICOLON = 0x3b;
const PERCENT = 0x25;
const QUESTION = 0x3f;
const BACKSLASH = 0x5c;
const HASH = 0x23;
const COLON = 0x3a;
const TILDE = 0x7e;

function refuse(detail: string, reason: FailureReason): never {
  throw new PortariaError('invalid-path', detail, { reason });
}

/** Value of an ASCII hex digit, or -1. */
function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}

/**
 * Bytes that must never appear percent-encoded in a path: `.`, `/`, `\`, `;`, `?`, `#`
 * and controls. An encoded `?` or `#` becomes the end of the path for an upstream that
 * decodes and then parses the target again (`/v1/reports%3Fx` is `/v1/reports` there,
 * while the route table saw another segment).
 */
function isForbiddenEncoded(byte: number): boolean {
  return (
    byte === DOT ||
    byte === SLASH ||
    byte === BACKSLASH ||
    byte === SEMICOLON ||
    byte === QUESTION ||
    byte === HASH ||
    byte < 0x20 ||
    byte === 0x7f
  );
}

/** RFC 3986 §2.3 unreserved, other than `.` (refused above): letters, digits, `-`, `_`, `~`. */
function isUnreserved(byte: number): boolean {
  const lower = byte | 0x20;
  return (
    (lower >= 0x61 && lower <= 0x7a) ||
    (byte >= 0x30 && byte <= 0x39) ||
    byte === 0x2d ||
    byte === 0x5f ||
    byte === 0x7e
  );
}

/** True when `path[start, end)` is `.` or `..` (the caller cut it at `;`). */
function isDotSegment(path: string, start: number, end: number): boolean {
  const length = end - start;
  if (length === 1) return path.charCodeAt(start) === DOT;
  if (length === 2) return path.charCodeAt(start) === DOT && path.charCodeAt(start + 1) === DOT;
  return false;
}

/** Splits and checks a raw request target; throws `invalid-path` on any ambiguity. */
export function parseRequestTarget(rawUrl: string): RequestTarget {
  const length = rawUrl.length;
  if (length === 0 || rawUrl.charCodeAt(0) !== SLASH) {
    refuse('The request target must be an absolute path.', 'not-origin-form');
  }

  // Segment bookkeeping: `segmentStart` is the index after the last `/`, `paramAt` the
  // first `;` in the current segment (or -1).
  let segmentStart = 1;
  let paramAt = -1;
  let sawParameter = false;
  let sawHighByte = false;
  /** A `:` (raw or encoded) or `~`: the Windows alias check runs (rare in API paths). */
  let sawWindowsAliasChar = false;
  let i = 1;
  for (; i < length; i++) {
    const code = rawUrl.charCodeAt(i);
    if (code === QUESTION) break;
    if (code === SLASH) {
      if (i === segmentStart) refuse('The request path must not contain "//".', 'empty-segment');
      if (isDotSegment(rawUrl, segmentStart, paramAt === -1 ? i : paramAt)) {
        refuse('The request path must not contain "." or ".." segments.', 'dot-segment');
      }
      checkSegmentEnd(rawUrl, i);
      segmentStart = i + 1;
      paramAt = -1;
    } else if (code === SEMICOLON) {
      if (paramAt === -1) paramAt = i;
      sawParameter = true;
    } else if (code === PERCENT) {
      const high = i + 2 < length ? hexValue(rawUrl.charCodeAt(i + 1)) : -1;
      const low = high === -1 ? -1 : hexValue(rawUrl.charCodeAt(i + 2));
      if (low === -1) refuse('The request path has malformed percent-encoding.', 'bad-percent');
      const byte = high * 16 + low;
      if (isForbiddenEncoded(byte)) {
        refuse(
          'The request path must not contain encoded ".", "/", "\\", ";", "?", "#" or controls.',
          'encoded',
        );
      }
      if (isUnreserved(byte)) {
        refuse(
          'The request path must not percent-encode letters, digits, "-", "_" or "~".',
          'encoded-unreserved',
        );
      }
      if (byte >= 0x80) sawHighByte = true;
      else if (byte === COLON) sawWindowsAliasChar = true;
      if (byte === PERCENT && i + 4 < length) {
        // `%25` followed by the encoding of a byte refused encoded once (`%252e`, `%2572`
        // for `r`, `%253F`) or of `%` itself: a second decode makes it that byte.
        const high2 = hexValue(rawUrl.charCodeAt(i + 3));
        const low2 = high2 === -1 ? -1 : hexValue(rawUrl.charCodeAt(i + 4));
        const byte2 = high2 * 16 + low2;
        if (
          low2 !== -1 &&
          (isForbiddenEncoded(byte2) || isUnreserved(byte2) || byte2 === PERCENT)
        ) {
          refuse('The request path must not contain double-encoded characters.', 'double-encoded');
        }
      }
      i += 2;
    } else if (code === COLON || code === TILDE) {
      sawWindowsAliasChar = true;
    } else if (code === BACKSLASH) {
      refuse('The request path must not contain "\\".', 'backslash');
    } else if (code === HASH) {
      refuse('The request target must not contain a fragment.', 'fragment');
    } else if (code <= 0x20 || code >= 0x7f) {
      refuse('The request path must contain only printable ASCII.', 'invalid-character');
    }
  }
  if (isDotSegment(rawUrl, segmentStart, paramAt === -1 ? i : paramAt)) {
    refuse('The request path must not contain "." or ".." segments.', 'dot-segment');
  }
  if (i > segmentStart) checkSegmentEnd(rawUrl, i);
  if (sawParameter) refuse('The request path must not contain ";" parameters.', 'path-parameter');
  if (sawHighByte) checkEncodedText(rawUrl.slice(0, i));
  if (sawWindowsAliasChar) checkWindowsAliases(rawUrl.slice(0, i));
  if (i === length) return { path: rawUrl, search: '' };

  for (let q = i + 1; q < length; q++) {
    const code = rawUrl.charCodeAt(q);
    if (code < 0x20 || code === 0x7f) {
      refuse('The request query must not contain control characters.', 'invalid-character');
    }
    // A fragment is never sent (RFC 9112 §3.2): a raw `#` means something else to every
    // parser behind us (cut here, or kept as data).
    if (code === HASH) refuse('The request target must not contain a fragment.', 'fragment');
  }
  return { path: rawUrl.slice(0, i), search: rawUrl.slice(i) };
}

/** The segment ending before `end` (not empty, not a dot segment) must not end in `.` or `%20`. */
function checkSegmentEnd(path: string, end: number): void {
  if (path.charCodeAt(end - 1) === DOT) {
    refuse('A request path segment must not end in ".".', 'trailing-dot');
  }
  if (
    end >= 3 &&
    path.charCodeAt(end - 3) === PERCENT &&
    path.charCodeAt(end - 2) === 0x32 &&
    path.charCodeAt(end - 1) === 0x30
  ) {
    refuse('A request path segment must not end in a space.', 'trailing-space');
  }
}

/**
 * A segment naming an NTFS alternate data stream (`reports::$DATA`) or shaped like a
 * Windows 8.3 short name (`REPORT~1`, `REPORT~1.PDF`): Windows serves each as another
 * name's file, so an
 * IIS upstream would answer `/v1/reports` to a path the route table saw as another.
 */
function checkWindowsAliases(path: string): void {
  let text = path;
  try {
    text = decodeURIComponent(path);
  } catch {
    // Reported by the UTF-8 check; the raw text is checked here.
  }
  if (WINDOWS_ALIAS.test(text)) {
    refuse(
      'A request path segment must not name an alternate data stream ("::") or look like a Windows short name ("NAME~1").',
      'windows-alias',
    );
  }
}

/** A stream type marker (`::$DATA`, `:name:$DATA`), or a whole segment shaped like `NAME~1.EXT`. */
const WINDOWS_ALIAS = /:\$|(?:^|\/)[^/.]{1,6}~\d+(?:\.[^/.]{1,3})?(?:\/|$)/;

/**
 * Spaces other than U+0020, invisible format characters (zero-width, bidi controls), and
 * every other default-ignorable code point (UAX #44; variation selectors, U+034F, the
 * Hangul fillers, reserved ones): invisible, and dropped by NFKC_Casefold, so an upstream
 * folding paths with it serves `/v1/admin<U+034F>/x` as `/v1/admin/x`.
 */
const UNUSUAL_SPACE_OR_INVISIBLE = /[\p{White_Space}\p{Cf}\p{Default_Ignorable_Code_Point}]/u;

/**
 * The path's percent-encoded bytes must form UTF-8 (RFC 3629: shortest form, no
 * surrogates, at most U+10FFFF; the caller checked every `%XX` is well-formed, so
 * `decodeURIComponent` fails only on such sequences, ECMA-262 Decode), and the text must
 * not change under NFKC nor hold unusual spaces or invisible characters. Only paths with
 * encoded non-ASCII bytes get here (ASCII controls and spaces are refused before).
 */
function checkEncodedText(path: string): void {
  let text: string;
  try {
    text = decodeURIComponent(path);
  } catch {
    refuse('The request path has percent-encoded bytes that are not UTF-8.', 'not-utf8');
  }
  // An encoded U+0020 inside a segment is a plain space: only the others count here.
  if (
    UNUSUAL_SPACE_OR_INVISIBLE.test(text.replaceAll(' ', '')) ||
    text.normalize('NFKC') !== text ||
    foldsToAscii(text)
  ) {
    refuse(
      'The request path must not contain characters that normalise to others, unusual spaces or invisible characters.',
      'ambiguous-unicode',
    );
  }
}

/**
 * True when a non-ASCII character changes case into ASCII: `ı` (U+0131) upper-cases to
 * `I` and `İ` (U+0130) lower-cases to `i` + a combining dot, so a case-insensitive
 * upstream (Java `equalsIgnoreCase`, .NET `OrdinalIgnoreCase`) reads `/v1/ınvoices` as
 * `/v1/invoices` while our ASCII-only case folding saw another path.
 */
function foldsToAscii(text: string): boolean {
  for (const char of text) {
    if (char.charCodeAt(0) < 0x80) continue;
    if (CASE_TO_ASCII.test(char.toUpperCase()) || CASE_TO_ASCII.test(char.toLowerCase())) {
      return true;
    }
  }
  return false;
}

/**
 * One ASCII letter, maybe with combining marks (`İ` lower-cases to `i` + U+0307): what a
 * single-character case mapping (Java, .NET) turns it into. `ß` → `SS` is not one: those
 * mappings leave `ß` as it is.
 */
const CASE_TO_ASCII = /^[A-Za-z]\p{M}*$/u;
