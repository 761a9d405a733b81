import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { identityHeaderValue } from '../../src/proxy/identityHeaderValue.js';
import { NFC_ID, NFD_ID, UNICODE_CLIENT_IDS } from '../helpers/unicodeIds.js';

/** A valid field value (RFC 9110 §5.5) that no parser trims: visible ASCII at both ends. */
const SAFE_FIELD_VALUE = /^(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?$/;

const cases: ReadonlyArray<readonly [string, string, string]> = [
  ['a plain ASCII id', 'acme', 'acme'],
  ['visible ASCII punctuation', 'svc:orders/v2@eu+1~x', 'svc:orders/v2@eu+1~x'],
  ['inner spaces (a scope list)', 'orders:read orders:write', 'orders:read orders:write'],
  ['an empty claim', '', ''],
  ['a percent sign', 'a%41', 'a%2541'],
  ['a leading space', ' acme', '%20acme'],
  ['a trailing space', 'acme ', 'acme%20'],
  ['a lone space', ' ', '%20'],
  ['a tab', 'a\tb', 'a%09b'],
  ['CR LF (header injection)', 'a\r\nX-Admin: 1', 'a%0D%0AX-Admin: 1'],
  ['NUL and DEL', '\u0000\u007f', '%00%7F'],
  ['Latin-1 range (é)', 'café', 'caf%C3%A9'],
  ['a C1 control (U+0085)', 'a\u0085', 'a%C2%85'],
  ['CJK', '客户', '%E5%AE%A2%E6%88%B7'],
  ['an astral emoji', '🚀', '%F0%9F%9A%80'],
  ['right-to-left letters', 'שלום', '%D7%A9%D7%9C%D7%95%D7%9D'],
  ['NFC é', NFC_ID, 'caf%C3%A9-partner'],
  ['NFD e + U+0301', NFD_ID, 'cafe%CC%81-partner'],
];

describe('identityHeaderValue', () => {
  for (const [name, text, expected] of cases) {
    test(`${name} → ${JSON.stringify(expected)}`, () => {
      const value = identityHeaderValue(text);
      assert.equal(value, expected);
      assert.match(value as string, SAFE_FIELD_VALUE);
      assert.equal(decodeURIComponent(value as string), text, 'decoding gives the claim back');
    });
  }

  test('a value without "%" is the claim itself, unchanged', () => {
    const text = 'partner-42.eu_west';
    assert.equal(identityHeaderValue(text), text);
  });

  for (const [script, id] of UNICODE_CLIENT_IDS) {
    test(`a ${script} id decodes back to its exact bytes`, () => {
      const value = identityHeaderValue(id) as string;
      assert.match(value, SAFE_FIELD_VALUE);
      assert.equal(decodeURIComponent(value), id);
      assert.ok(!/[^\x21-\x7e]/.test(value.replaceAll('%', '')), 'ASCII only');
    });
  }

  for (const [name, text] of [
    ['a lone high surrogate', 'a\ud800'],
    ['a lone low surrogate', '\udc00b'],
    ['a reversed pair', '\ude80\ud83d'],
  ] as const) {
    test(`${name} has no UTF-8 form → no value`, () => {
      assert.equal(identityHeaderValue(text), undefined);
    });
  }

  test('every code point round-trips to a safe field value', () => {
    let text = '';
    for (let cp = 0; cp < 0x11000; cp += 7) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      text += String.fromCodePoint(cp);
    }
    text += String.fromCodePoint(0x10ffff, 0x1f600, 0x20);
    const value = identityHeaderValue(text) as string;
    assert.match(value, SAFE_FIELD_VALUE);
    assert.equal(decodeURIComponent(value), text);
  });
});
