/**
 * Key pairs come from two places only: `src/keys/generateKey.ts` (the CLI's signing keys)
 * and `test/helpers/keyPairs.ts` (tests), both of which generate PEM and import it again.
 * A KeyObject taken straight from `generateKeyPair(Sync)` and exported as JWK can
 * deadlock Node 20 when a garbage collection destroys its generation job mid-export (a
 * hung `npm test` was traced to it), so no other file may call the raw API.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');
/** A call, not the `generateKeyPair(Sync)` spelling used in comments. */
const CALL = /\bgenerateKeyPair(?:Sync)?\s*\((?!Sync\))/;
const ALLOWED = new Set(['src/keys/generateKey.ts', 'test/helpers/keyPairs.ts']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

test('only the PEM-round-tripping helpers call generateKeyPair(Sync)', () => {
  const offenders = ['src', 'test', 'bench', 'scripts']
    .flatMap((dir) => sources(join(ROOT, dir)))
    .map((path) => relative(ROOT, path))
    .filter((path) => !ALLOWED.has(path))
    .filter((path) => CALL.test(readFileSync(join(ROOT, path), 'utf8')));
  assert.deepEqual(offenders, []);
});

test('the CLI generates its signing keys as PEM', () => {
  const text = readFileSync(join(ROOT, 'src/keys/generateKey.ts'), 'utf8');
  assert.match(text, /privateKeyEncoding: \{ type: 'pkcs8', format: 'pem' \}/);
});
