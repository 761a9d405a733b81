import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { editDistance, likelyMeant, nearestName } from '../../src/lib/nearestName.js';

describe('nearestName', () => {
  const distances: [string, string, number][] = [
    ['list', 'list', 0],
    ['lsit', 'list', 1],
    ['lst', 'list', 1],
    ['client', 'clients', 1],
    ['frob', 'keys', 4],
    ['', 'abc', 3],
    ['ca', 'abc', 3],
  ];
  for (const [a, b, d] of distances) {
    test(`editDistance(${JSON.stringify(a)}, ${JSON.stringify(b)}) is ${d}`, () => {
      assert.equal(editDistance(a, b), d);
      assert.equal(editDistance(b, a), d);
    });
  }

  test('picks the candidate with the fewest edits, the first of equals, null for none', () => {
    assert.deepEqual(nearestName('kyes', ['clients', 'keys', 'revoke']), {
      name: 'keys',
      distance: 1,
    });
    assert.deepEqual(nearestName('ab', ['ax', 'xb']), { name: 'ax', distance: 1 });
    assert.equal(nearestName('x', []), null);
  });

  const meant: [string, string | null][] = [
    ['lsit', 'list'],
    ['client', 'clients'],
    ['rotat', 'rotate'],
    ['list', null],
    ['ls', null],
    ['frob', null],
    ['x', null],
  ];
  for (const [given, expected] of meant) {
    test(`likelyMeant suggests ${JSON.stringify(expected)} for ${JSON.stringify(given)}`, () => {
      assert.equal(likelyMeant(given, ['list', 'clients', 'rotate', 'keys']), expected);
    });
  }
});
