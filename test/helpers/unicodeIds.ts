/**
 * Client ids in several scripts, for the tests of the client-id rule (any Unicode text of
 * 1 to 256 UTF-8 bytes, compared byte for byte).
 */
export const UNICODE_CLIENT_IDS: ReadonlyArray<readonly [script: string, id: string]> = [
  ['Latin with diacritics', 'cliënt-ü-✓'],
  ['CJK', '客户端-東京-파트너'],
  ['emoji', '🚀-partner-👩‍💻'],
  ['right-to-left', 'عميل-שותף'],
];

/** One name in its two Unicode spellings: two different client ids. */
export const NFC_ID = 'caf\u00e9-partner';
export const NFD_ID = 'cafe\u0301-partner';
