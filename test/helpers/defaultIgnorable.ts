/**
 * Default-ignorable code points (Unicode `Default_Ignorable_Code_Point`) that are neither
 * white space nor format characters (`Cf`), and that NFKC leaves alone: invisible, and
 * removed by an upstream that folds paths with NFKC_Casefold (UAX #31, UTS #46).
 */

/** Every one of them that Unicode assigns, as code points. */
export const INVISIBLE_IGNORABLES: readonly number[] = [
  0x034f, // COMBINING GRAPHEME JOINER
  0x115f, // HANGUL CHOSEONG FILLER
  0x1160, // HANGUL JUNGSEONG FILLER
  0x17b4, // KHMER VOWEL INHERENT AQ
  0x17b5, // KHMER VOWEL INHERENT AA
  0x180b, // MONGOLIAN FREE VARIATION SELECTOR ONE
  0x180c,
  0x180d,
  0x180f, // MONGOLIAN FREE VARIATION SELECTOR FOUR
  ...range(0xfe00, 0xfe0f), // VARIATION SELECTOR-1 to -16
  ...range(0xe0100, 0xe01ef), // VARIATION SELECTOR-17 to -256
];

function range(first: number, last: number): number[] {
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

/** `U+034F`. */
export function codePointName(codePoint: number): string {
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** The code point's UTF-8 octets, percent-encoded (`%CD%8F`). */
export function percentEncoded(codePoint: number): string {
  return [...Buffer.from(String.fromCodePoint(codePoint))]
    .map((octet) => `%${octet.toString(16).toUpperCase()}`)
    .join('');
}
