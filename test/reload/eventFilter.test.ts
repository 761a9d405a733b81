import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { isRelevant, watchedDirectories } from '../../src/reload/watchedSource.js';

test('a watched file makes only its own name (and Kubernetes ..entries) relevant in its directory', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-filter-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'keys'));
  await writeFile(join(dir, 'clients.json'), '{}');
  const dirs = watchedDirectories([
    join(dir, 'clients.json'),
    join(dir, 'keys'),
    join(dir, 'portaria.yaml'),
  ]);
  assert.deepEqual([...(dirs.get(dir) ?? [])].sort(), ['clients.json', 'portaria.yaml']);
  assert.equal(dirs.get(join(dir, 'keys')), null);
  const names = dirs.get(dir) ?? null;
  assert.equal(isRelevant(names, 'clients.json'), true);
  assert.equal(isRelevant(names, 'portaria.yaml'), true);
  assert.equal(isRelevant(names, '..data'), true);
  assert.equal(isRelevant(names, '..2026_11_22_04_00_00.123'), true);
  assert.equal(
    isRelevant(names, 'gateway.log'),
    false,
    'a busy log file next to the clients file is ignored',
  );
  assert.equal(isRelevant(names, 'clients.json.tmp-1234'), false);
  assert.equal(isRelevant(names, null), true, 'an event without a name always counts');
  assert.equal(isRelevant(null, 'anything'), true, 'every entry of a watched directory counts');
});
