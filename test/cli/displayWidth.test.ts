import assert from 'node:assert/strict';
import { test } from 'node:test';
import { displayWidth, padToWidth } from '../../src/cli/displayWidth.js';
import { NFC_ID, NFD_ID } from '../helpers/unicodeIds.js';

for (const [name, text, width] of [
  ['ASCII', 'acme', 4],
  ['Latin with diacritics', 'cliënt-ü-✓', 10],
  ['NFC é', NFC_ID, 12],
  ['NFD e + combining acute', NFD_ID, 12],
  ['CJK (wide)', '客户端', 6],
  ['Hangul (wide)', '파트너', 6],
  ['an emoji (wide)', '🚀', 2],
  ['right-to-left letters', 'عميل', 4],
  ['a zero-width joiner', 'a\u200db', 2],
] as const) {
  test(`${name}: ${JSON.stringify(text)} takes ${width} columns`, () => {
    assert.equal(displayWidth(text), width);
  });
}

test('padToWidth pads to columns, never cuts', () => {
  assert.equal(padToWidth('客户', 6), '客户  ');
  assert.equal(padToWidth(NFD_ID, 14), `${NFD_ID}  `);
  assert.equal(padToWidth('toolong', 3), 'toolong');
});
