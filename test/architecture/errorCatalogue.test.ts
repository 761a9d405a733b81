import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PortariaError, PROBLEM_CODES, PROBLEMS } from '../../src/errors.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

test('the error catalogue is pinned: code → status', () => {
  const statuses = Object.fromEntries(PROBLEM_CODES.map((code) => [code, PROBLEMS[code].status]));
  assert.deepEqual(statuses, {
    'invalid-request': 400,
    'invalid-path': 400,
    'invalid-client': 401,
    'token-missing': 401,
    'token-invalid': 401,
    'token-expired': 401,
    'token-revoked': 401,
    'token-binding-failed': 401,
    'token-binding-required': 401,
    'certificate-required': 401,
    'certificate-invalid': 401,
    'dpop-proof-invalid': 401,
    'insufficient-scope': 403,
    'untrusted-peer': 403,
    'not-found': 404,
    'method-not-allowed': 405,
    'request-timeout': 408,
    'payload-too-large': 413,
    'unsupported-media-type': 415,
    'too-many-requests': 429,
    'quota-exceeded': 429,
    'headers-too-large': 431,
    'not-implemented': 501,
    'upstream-unavailable': 502,
    'service-unavailable': 503,
    'issuer-unavailable': 503,
    'upstream-timeout': 504,
  });
});

test('every code has a fixed, non-empty public title', () => {
  for (const code of PROBLEM_CODES) {
    const error = new PortariaError(code, 'detail');
    assert.equal(error.title, PROBLEMS[code].title);
    assert.ok(error.title.length > 0);
    assert.equal(error.reason, code, 'the private reason defaults to the code');
  }
});

test('the documented error table lists every code with its status, and nothing else', () => {
  const readme = readFileSync(join(root, 'docs', 'token-operation.md'), 'utf8');
  const rows = [...readme.matchAll(/^\| `([a-z-]+)` \| (\d{3}) \|/gm)].map((m) => [
    m[1],
    Number(m[2]),
  ]);
  const expected = PROBLEM_CODES.map((code) => [code, PROBLEMS[code].status]);
  assert.deepEqual(
    rows.sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    expected.sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  );
});
