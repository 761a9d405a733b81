import assert from 'node:assert/strict';
import { chmod, chown, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { replaceFile, writeNewFile } from '../../src/lib/atomicWrite.js';
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
});
