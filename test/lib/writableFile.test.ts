import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { unwritableFileReason } from '../../src/lib/writableFile.js';

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-writable-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('unwritableFileReason', () => {
  test('an existing regular file, or a missing one under existing or missing directories: null', async (t) => {
    const dir = await tempDir(t);
    await writeFile(join(dir, 'log'), 'x');
    assert.equal(await unwritableFileReason(join(dir, 'log')), null);
    assert.equal(await unwritableFileReason(join(dir, 'new.log')), null);
    assert.equal(await unwritableFileReason(join(dir, 'a', 'b', 'new.log')), null);
    // Nothing was created on the way.
    assert.deepEqual(await readdir(dir), ['log']);
  });

  test('a directory where the file should be is not a regular file', async (t) => {
    const dir = await tempDir(t);
    await mkdir(join(dir, 'log'));
    assert.equal(await unwritableFileReason(join(dir, 'log')), 'not a regular file');
  });

  test('a path through a regular file is refused (ENOTDIR)', async (t) => {
    const dir = await tempDir(t);
    await writeFile(join(dir, 'plain'), 'x');
    assert.equal(await unwritableFileReason(join(dir, 'plain', 'log')), 'ENOTDIR');
    assert.equal(await unwritableFileReason(join(dir, 'plain', 'a', 'log')), 'ENOTDIR');
  });
});
