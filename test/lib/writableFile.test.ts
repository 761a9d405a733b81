import assert from 'node:assert/strict';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { unwritableFileReason } from '../../src/lib/writableFile.js';
import { tempDir } from '../helpers/process.js';

describe('unwritableFileReason', () => {
  test('an existing regular file, or a missing one under existing or missing directories: null', async (t) => {
    const dir = await tempDir(t, 'portaria-writable-');
    await writeFile(join(dir, 'log'), 'x');
    assert.equal(await unwritableFileReason(join(dir, 'log')), null);
    assert.equal(await unwritableFileReason(join(dir, 'new.log')), null);
    assert.equal(await unwritableFileReason(join(dir, 'a', 'b', 'new.log')), null);
    // Nothing was created on the way.
    assert.deepEqual(await readdir(dir), ['log']);
  });

  test('a directory where the file should be is not a regular file', async (t) => {
    const dir = await tempDir(t, 'portaria-writable-');
    await mkdir(join(dir, 'log'));
    assert.equal(await unwritableFileReason(join(dir, 'log')), 'not a regular file');
  });

  test('a path through a regular file is refused (ENOTDIR)', async (t) => {
    const dir = await tempDir(t, 'portaria-writable-');
    await writeFile(join(dir, 'plain'), 'x');
    assert.equal(await unwritableFileReason(join(dir, 'plain', 'log')), 'ENOTDIR');
    assert.equal(await unwritableFileReason(join(dir, 'plain', 'a', 'log')), 'ENOTDIR');
  });
});
