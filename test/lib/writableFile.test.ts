import assert from 'node:assert/strict';
import { chmod, chown, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { unwritableFileReason } from '../../src/lib/writableFile.js';
import { OTHER_USER_UNAVAILABLE, runAsUser, sourceModule } from '../helpers/otherUser.js';
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

  test('a writable file in a directory this user cannot add to is refused (compaction writes there)', {
    skip: OTHER_USER_UNAVAILABLE,
  }, async (t) => {
    const dir = await tempDir(t, 'portaria-writable-');
    await chmod(dir, 0o755); // root's directory: others may read it, not add to it
    const file = join(dir, 'revocations.log');
    await writeFile(file, '');
    await chown(file, 1002, 1002);
    const run = runAsUser(
      { uid: 1002, gid: 1002, groups: [] },
      sourceModule('lib/writableFile.js'),
      `return m.unwritableFileReason(${JSON.stringify(file)});`,
    );
    assert.equal(run.status, 0, run.stderr);
    assert.equal(JSON.parse(run.stdout), `${dir}: EACCES`);
  });
});
