/**
 * `escapeForReaders`: DEL, the C1 controls and U+2028/U+2029 in serialised JSON become
 * `\uXXXX`, and the text parses to the same value; nothing else changes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { escapedForReaders, escapeForReaders } from '../../src/observability/jsonLineEscapes.js';

const ESCAPED = [...Array.from({ length: 0x9f - 0x7f + 1 }, (_, i) => 0x7f + i), 0x2028, 0x2029];

test('every reader control is written as \\uXXXX and parses back to itself', () => {
  for (const unit of ESCAPED) {
    const value = `a${String.fromCharCode(unit)}b`;
    const json = escapeForReaders(JSON.stringify({ value }));
    assert.equal(json, `{"value":"a\\u${unit.toString(16).padStart(4, '0')}b"}`);
    assert.deepEqual(JSON.parse(json), { value });
    assert.equal(escapedForReaders(unit), true);
  }
});

test('text without them is returned as it is', () => {
  const json = JSON.stringify({ value: 'é€😀\u00a0\u007e\u2027\u202a "\\\n' });
  assert.equal(escapeForReaders(json), json);
  for (const unit of [0x7e, 0xa0, 0x2027, 0x202a, 0x0a]) {
    assert.equal(escapedForReaders(unit), false, unit.toString(16));
  }
});
