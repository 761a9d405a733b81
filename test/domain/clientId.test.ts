import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { clientIdProblem, isClientId } from '../../src/domain/clientId.js';
import { NFC_ID, NFD_ID, UNICODE_CLIENT_IDS } from '../helpers/unicodeIds.js';

const RULE = 'must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates';

const accepted: ReadonlyArray<readonly [string, string]> = [
  ['one ASCII character', 'a'],
  ['256 ASCII characters', 'a'.repeat(256)],
  ['ASCII with spaces and a percent sign', 'Acme Corp 100%'],
  ['85 CJK characters and one ASCII (256 bytes)', `${'客'.repeat(85)}x`],
  ['64 astral emoji (256 bytes)', '🚀'.repeat(64)],
  ['an emoji ZWJ sequence', '👩‍💻'],
  ['NFC é', NFC_ID],
  ['NFD e + U+0301', NFD_ID],
  ['a private-use character', '\ue000'],
  ...UNICODE_CLIENT_IDS.map(([script, id]) => [script, id] as const),
];

const refused: ReadonlyArray<readonly [string, unknown, string]> = [
  ['an empty string', '', 'it is empty'],
  ['257 ASCII characters', 'a'.repeat(257), 'it takes 257 bytes'],
  ['86 CJK characters (258 bytes)', '客'.repeat(86), 'it takes 258 bytes'],
  ['65 astral emoji (260 bytes)', '🚀'.repeat(65), 'it takes 260 bytes'],
  ['a newline', 'a\nb', 'control character U+000A at index 1'],
  ['a tab', '\tab', 'control character U+0009 at index 0'],
  ['NUL', 'a\u0000', 'control character U+0000 at index 1'],
  ['DEL', 'a\u007f', 'control character U+007F at index 1'],
  ['a C1 control (U+0085)', 'é\u0085', 'control character U+0085 at index 1'],
  ['a lone high surrogate', 'a\ud83d', 'lone surrogate U+D83D at index 1'],
  ['a lone low surrogate', '\ude80a', 'lone surrogate U+DE80 at index 0'],
  ['a reversed pair', '\ude80\ud83d', 'lone surrogate U+DE80 at index 0'],
];

describe('client id rule', () => {
  for (const [name, id] of accepted) {
    test(`${name} is a client id`, () => {
      assert.equal(clientIdProblem(id), null);
      assert.equal(isClientId(id), true);
    });
  }
  for (const [name, id, flaw] of refused) {
    test(`${name} is refused, naming the rule`, () => {
      assert.equal(clientIdProblem(id), `${RULE} (${flaw})`);
      assert.equal(isClientId(id as string), false);
    });
  }
  test('a non-string is refused, naming the rule', () => {
    assert.equal(
      clientIdProblem(42),
      'must be a string of 1 to 256 bytes of UTF-8 without control characters or lone surrogates',
    );
  });
  test('the NFC and NFD spellings are two ids (no normalisation)', () => {
    assert.notEqual(NFC_ID, NFD_ID);
    assert.equal(NFC_ID.normalize('NFD'), NFD_ID);
    assert.equal(new Set([NFC_ID, NFD_ID]).size, 2);
  });
});
