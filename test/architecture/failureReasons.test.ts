/**
 * The private failure reasons are a closed catalogue (`FAILURE_REASONS` in src/errors.ts):
 * they are metric labels and log fields. The compiler refuses a reason outside it; these
 * tests refuse a catalogue entry nothing uses, and read the sources as text to show that
 * the reasons written as literals are the catalogue's.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { FAILURE_REASONS, PROBLEM_CODES } from '../../src/errors.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const src = join(root, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every source file but the catalogue itself, as text. */
const sources = sourceFiles(src)
  .filter((file) => relative(src, file) !== 'errors.ts')
  .map((file) => ({ file: relative(root, file), text: readFileSync(file, 'utf8') }));

const REASON = `'([a-z0-9-]+)'`;

/** The places a reason is written as a literal (the catalogue's comment calls them all). */
const REASON_SITES: readonly RegExp[] = [
  // `{ reason: 'x' }`, `scope.reason = 'x'`, `reason: cond ? 'x' : 'y'`
  new RegExp(`\\breason(?::|\\s=)\\s*(?:[^'\\n,;]*\\?\\s*${REASON}\\s*:\\s*)?${REASON}`, 'g'),
  // `invalid('x', …)`, `invalidRequest('x', …)`, `keysUnavailable('x')`
  new RegExp(`\\b(?:invalid|invalidRequest|keysUnavailable)\\(\\s*${REASON}`, 'g'),
  // `refuse('detail', 'x')` in the request-path rules
  new RegExp(`\\brefuse\\(\\s*'(?:[^'\\\\]|\\\\.)*',\\s*${REASON}\\s*,?\\s*\\)`, 'g'),
  // `unauthorized(code, 'x', …)` in the admin API
  new RegExp(`\\bunauthorized\\(\\s*'[a-z-]+',\\s*${REASON}`, 'g'),
];

function literalReasons(): Map<string, string> {
  const found = new Map<string, string>();
  for (const { file, text } of sources) {
    for (const site of REASON_SITES) {
      for (const match of text.matchAll(site)) {
        for (const reason of match.slice(1)) {
          if (reason !== undefined && !found.has(reason)) found.set(reason, file);
        }
      }
    }
  }
  return found;
}

test('reasons are unique, short kebab-case names, and none repeats a problem code', () => {
  assert.equal(new Set(FAILURE_REASONS).size, FAILURE_REASONS.length, 'a reason is listed twice');
  for (const reason of FAILURE_REASONS) {
    assert.match(reason, /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/, reason);
    assert.ok(reason.length <= 32, reason);
  }
  const codes = new Set<string>(PROBLEM_CODES);
  assert.deepEqual(
    FAILURE_REASONS.filter((reason) => codes.has(reason)),
    [],
    'a code is already a reason (the default one)',
  );
});

test('every reason written as a literal in src is in the catalogue or is a problem code', () => {
  const found = literalReasons();
  assert.ok(found.size > 60, `the scan found only ${found.size} reasons: it no longer reads them`);
  const known = new Set<string>([...FAILURE_REASONS, ...PROBLEM_CODES]);
  const unknown = [...found].filter(([reason]) => !known.has(reason)).map((e) => e.join(' in '));
  assert.deepEqual(unknown, []);
});

test('every reason in the catalogue is used somewhere in src', () => {
  const text = sources.map((s) => s.text).join('\n');
  // Reasons composed from a closed kind (`upstream-${kind}`, `malformed-${name}`).
  const prefixes = [...text.matchAll(/`([a-z][a-z0-9-]*-)\$\{/g)].map((m) => m[1] as string);
  const unused = FAILURE_REASONS.filter(
    (reason) => !text.includes(`'${reason}'`) && !prefixes.some((p) => reason.startsWith(p)),
  );
  assert.deepEqual(unused, []);
});
