/** Shared scope sets: one per distinct scope string, within a bound. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ScopeSets } from '../../src/verify/scopeSets.js';

describe('ScopeSets', () => {
  test('the same scope string gives the same set and string, parsed once', () => {
    const sets = new ScopeSets();
    const first = sets.get('orders:read orders:write');
    const second = sets.get(`orders:read ${'orders:write'}`);
    assert.equal(second, first);
    assert.deepEqual([...first.scopes], ['orders:read', 'orders:write']);
    assert.equal(first.text, 'orders:read orders:write');
    assert.equal(sets.size, 1);
  });

  test('another scope string gives another set', () => {
    const sets = new ScopeSets();
    assert.notEqual(sets.get('a').scopes, sets.get('b').scopes);
    assert.equal(sets.size, 2);
  });

  test('an empty scope gives the empty set, without a table entry', () => {
    const sets = new ScopeSets();
    assert.equal(sets.get('').scopes.size, 0);
    assert.equal(sets.size, 0);
  });

  test('at its limit the table starts again: never more entries than the limit', () => {
    const sets = new ScopeSets(2);
    sets.get('a');
    sets.get('b');
    const c = sets.get('c');
    assert.equal(sets.size, 1);
    assert.equal(sets.get('c'), c);
    assert.deepEqual([...sets.get('a').scopes], ['a'], 'a string seen before is parsed again');
  });
});
