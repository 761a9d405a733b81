import assert from 'node:assert/strict';
import { test } from 'node:test';
import { escapedId, lookalikesOf } from '../../src/clients/lookalikeIds.js';
import { NFC_ID, NFD_ID } from '../helpers/unicodeIds.js';

test('lookalikesOf: ids equal under NFKC but not byte for byte', () => {
  const ids = [NFC_ID, NFD_ID, 'ﬁle', 'file', 'other'];
  assert.deepEqual(lookalikesOf(ids, NFC_ID), [NFD_ID]);
  assert.deepEqual(lookalikesOf(ids, NFD_ID), [NFC_ID]);
  assert.deepEqual(lookalikesOf(ids, 'file'), ['ﬁle']);
  assert.deepEqual(lookalikesOf(ids, 'other'), []);
  assert.deepEqual(lookalikesOf(['Other'], 'other'), [], 'case is not folded');
});

for (const [id, expected] of [
  ['acme', '"acme"'],
  [NFC_ID, '"caf\\u00e9-partner"'],
  [NFD_ID, '"cafe\\u0301-partner"'],
  ['🚀', '"\\ud83d\\ude80"'],
  ['a"b', '"a\\"b"'],
] as const) {
  test(`escapedId(${JSON.stringify(id)}) is ${expected}`, () => {
    assert.equal(escapedId(id), expected);
    assert.equal(JSON.parse(escapedId(id)), id);
  });
}
