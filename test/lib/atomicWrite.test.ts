import assert from 'node:assert/strict';
import { chmod, chown, mkdir, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { replaceFile, writeNewFile } from '../../src/lib/atomicWrite.js';
import { OTHER_USER_UNAVAILABLE, runAsUser, sourceModule } from '../helpers/otherUser.js';
import { tempDir } from '../helpers/process.js';

describe('atomicWrite', () => {
  test('a new file is 0600 and no temporary file is left', async (t) => {
    const dir = await tempDir(t, 'portaria-atomic-');
    await replaceFile(dir, 'clients.json', '{}');
    await writeNewFile(dir, 'key.pem', 'k');
    assert.equal((await stat(join(dir, 'clients.json'))).mode & 0o777, 0o600);
    assert.equal((await stat(join(dir, 'key.pem'))).mode & 0o777, 0o600);
    assert.deepEqual((await readdir(dir)).sort(), ['clients.json', 'key.pem']);
  });

  test('replacing a file keeps the mode the operator gave it', async (t) => {
    const dir = await tempDir(t, 'portaria-atomic-');
    const path = await replaceFile(dir, 'clients.json', '{"v":1}');
    await chmod(path, 0o640);
    await replaceFile(dir, 'clients.json', '{"v":2}');
    assert.equal(await readFile(path, 'utf8'), '{"v":2}');
    assert.equal((await stat(path)).mode & 0o777, 0o640);
  });

  test('replacing a world-readable file drops the permissions for others', async (t) => {
    const dir = await tempDir(t, 'portaria-atomic-');
    const path = await replaceFile(dir, 'clients.json', '{"v":1}');
    await chmod(path, 0o664);
    await replaceFile(dir, 'clients.json', '{"v":2}');
    assert.equal((await stat(path)).mode & 0o777, 0o660);
  });

  test('replacing a file keeps its owner and group', {
    skip: process.getuid?.() !== 0 ? 'only root can give a file to another owner' : false,
  }, async (t) => {
    const dir = await tempDir(t, 'portaria-atomic-');
    const path = await replaceFile(dir, 'clients.json', '{"v":1}');
    await chown(path, 10001, 10001);
    await replaceFile(dir, 'clients.json', '{"v":2}');
    const info = await stat(path);
    assert.deepEqual([info.uid, info.gid], [10001, 10001]);
  });

  test('a member of the group who does not own the file keeps that group on the new file', {
    skip: OTHER_USER_UNAVAILABLE,
  }, async (t) => {
    // The gateway reads clients.json through group 2000; an operator (1002, a member of
    // 2000) who does not own the file runs the CLI.
    const root = await tempDir(t, 'portaria-atomic-');
    await chmod(root, 0o755);
    const dir = join(root, 'shared');
    await mkdir(dir);
    await chown(dir, 1001, 2000);
    await chmod(dir, 0o770);
    const path = await replaceFile(dir, 'clients.json', '{"v":1}');
    await chown(path, 1001, 2000);
    await chmod(path, 0o660);
    const run = runAsUser(
      { uid: 1002, gid: 1002, groups: [2000] },
      sourceModule('lib/atomicWrite.js'),
      `await m.replaceFile(${JSON.stringify(dir)}, 'clients.json', '{"v":2}');`,
    );
    assert.equal(run.status, 0, run.stderr);
    const info = await stat(path);
    assert.equal(await readFile(path, 'utf8'), '{"v":2}');
    assert.deepEqual([info.uid, info.gid, info.mode & 0o777], [1002, 2000, 0o660]);
  });
});
