import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { PairAttempts } from '../../src/limits/pairAttempts.js';

const FORGET_S = 60;

describe('PairAttempts', () => {
  test('a pair without a failure runs any number of checks at once', () => {
    const attempts = new PairAttempts(10, FORGET_S, new ManualClock());
    assert.equal(attempts.begin('p'), true);
    assert.equal(attempts.begin('p'), true);
    assert.equal(attempts.begin('p'), true);
  });

  test('after a failure one check at a time, until a success or forgetAfter', () => {
    const clock = new ManualClock();
    const attempts = new PairAttempts(10, FORGET_S, clock);
    assert.equal(attempts.begin('p'), true);
    attempts.end('p', 'failed');
    assert.equal(attempts.begin('p'), true, 'nothing in flight');
    assert.equal(attempts.begin('p'), false, 'one is in flight');
    assert.equal(attempts.begin('q'), true, 'another pair is not affected');
    attempts.end('p', 'unchecked');
    assert.equal(attempts.begin('p'), true, 'an unchecked end releases, and keeps the failure');
    assert.equal(attempts.begin('p'), false);
    clock.advance(FORGET_S * 1000);
    assert.equal(attempts.begin('p'), true, 'the failure is forgotten');
    attempts.end('p', 'unchecked');
    attempts.end('p', 'unchecked');

    attempts.begin('p');
    attempts.end('p', 'failed');
    attempts.begin('p');
    attempts.end('p', 'succeeded');
    assert.equal(attempts.begin('p'), true);
    assert.equal(attempts.begin('p'), true, 'a success clears the failure');
  });

  test('bounded: the least recently used pair is forgotten first', () => {
    const attempts = new PairAttempts(2, FORGET_S, new ManualClock());
    attempts.begin('a');
    attempts.end('a', 'failed');
    attempts.begin('a');
    attempts.begin('b');
    attempts.begin('c'); // evicts a, the least recently used
    assert.equal(attempts.begin('a'), true, 'a forgotten pair starts over');
    attempts.end('b', 'failed'); // evicted by a meanwhile: nothing to end
    assert.equal(attempts.begin('b'), true);
    assert.equal(attempts.begin('b'), true, 'its failure went with it');
  });
});
