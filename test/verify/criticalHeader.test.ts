/** The `crit` header rules (RFC 7515 §4.1.11, RFC 7797 §3), named by their refusal. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PortariaError } from '../../src/errors.js';
import { checkCriticalHeader } from '../../src/verify/criticalHeader.js';

function outcome(header: Record<string, unknown>): string {
  try {
    return `b64 ${checkCriticalHeader(header)}`;
  } catch (error) {
    assert.ok(error instanceof PortariaError);
    return `refused ${error.code} ${error.reason}`;
  }
}

describe('checkCriticalHeader', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['no crit', { alg: 'ES256' }, 'b64 true'],
    [
      'crit not an array',
      { alg: 'ES256', crit: 'b64', b64: true },
      'refused token-invalid malformed',
    ],
    ['crit empty', { alg: 'ES256', crit: [] }, 'refused token-invalid malformed'],
    ['crit with an empty name', { alg: 'ES256', crit: [''] }, 'refused token-invalid malformed'],
    ['crit with a number', { alg: 'ES256', crit: [1] }, 'refused token-invalid malformed'],
    ['crit null', { alg: 'ES256', crit: null }, 'refused token-invalid malformed'],
    [
      'an extension not understood',
      { alg: 'ES256', crit: ['exp-hint'], 'exp-hint': 1 },
      'refused token-invalid unsupported',
    ],
    [
      'an understood extension after one not understood',
      { alg: 'ES256', crit: ['exp-hint', 'b64'], b64: true },
      'refused token-invalid unsupported',
    ],
    ['b64 listed but absent', { alg: 'ES256', crit: ['b64'] }, 'refused token-invalid malformed'],
    [
      'b64 listed, not a boolean',
      { alg: 'ES256', crit: ['b64'], b64: 'false' },
      'refused token-invalid malformed',
    ],
    ['b64 listed and true', { alg: 'ES256', crit: ['b64'], b64: true }, 'b64 true'],
    ['b64 listed and false', { alg: 'ES256', crit: ['b64'], b64: false }, 'b64 false'],
    ['b64 false but not listed in crit: ignored', { alg: 'ES256', b64: false }, 'b64 true'],
  ];
  for (const [input, header, expected] of cases) {
    test(`${input} → ${expected}`, () => {
      assert.equal(outcome(header), expected);
    });
  }
});
