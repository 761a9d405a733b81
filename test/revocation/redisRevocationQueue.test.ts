/**
 * The durable queue of revocations waiting for Redis: fsynced appends in the local log's
 * line format, created only when first needed, partial drops that keep later records,
 * and a torn last line (a crash mid-append, never acknowledged) reported and skipped.
 * One process at a time: a second queue on the same file is refused at open.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  appendFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { lockPathFor } from '../../src/lib/lockFile.js';
import { decodeRevocationLine } from '../../src/revocation/revocationLogRecord.js';
import { RevocationQueue } from '../../src/revocation/revocationQueue.js';

async function queueFile(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-queue-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'data', 'pending.log');
}

const token = (tokenId: string) => ({ kind: 'token' as const, tokenId, expiresAt: 2_000_000_000 });

async function lines(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8')).split('\n').filter(Boolean);
}

test('the queue file is created (0700 directory, 0600 file) on the first append only', async (t) => {
  const file = await queueFile(t);
  const queue = await RevocationQueue.open(file);
  t.after(() => queue.close());
  await assert.rejects(stat(file), { code: 'ENOENT' });
  await queue.append(token('a'));
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  assert.equal((await stat(dirname(file))).mode & 0o777, 0o700);
  await queue.append(token('b'));
  assert.deepEqual(
    (await lines(file)).map((l) => decodeRevocationLine(l)),
    [token('a'), token('b')],
  );
});

test('drop removes only the records replayed; records appended meanwhile stay, also across a reopen', async (t) => {
  const file = await queueFile(t);
  const queue = await RevocationQueue.open(file);
  await queue.append(token('a'));
  await queue.append(token('b'));
  const snapshot = queue.records();
  await queue.append(token('c'));
  await queue.drop(snapshot.length);
  assert.deepEqual(queue.records(), [token('c')]);
  await queue.close();

  const again = await RevocationQueue.open(file);
  t.after(() => again.close());
  assert.deepEqual(again.records(), [token('c')]);
  await again.drop(1);
  assert.equal(await readFile(file, 'utf8'), '');
  await again.append(token('d'));
  assert.equal((await lines(file)).length, 1);
});

test('a torn last line is reported and skipped; the next write repairs the file', async (t) => {
  const file = await queueFile(t);
  const first = await RevocationQueue.open(file);
  await first.append(token('a'));
  await first.close();
  await appendFile(file, '1234abcd {"kind":"tok');
  const logged: string[] = [];
  const queue = await RevocationQueue.open(file, (event) => logged.push(event));
  t.after(() => queue.close());
  assert.deepEqual(logged, ['revocation queue line corrupt']);
  assert.deepEqual(queue.records(), [token('a')]);
  await queue.append(token('b'));
  assert.deepEqual(
    (await lines(file)).map((l) => decodeRevocationLine(l)),
    [token('a'), token('b')],
  );
});

test('a second queue on the same file is refused naming revocation.queueFile and the holder; after close a new one opens', async (t) => {
  const file = await queueFile(t);
  const first = await RevocationQueue.open(file);
  await first.append(token('a'));
  await assert.rejects(RevocationQueue.open(file), {
    name: 'ConfigError',
    message:
      `invalid configuration:\n  - revocation.queueFile: ${file} is in use by this process ` +
      `(pid ${process.pid}) (lock ${lockPathFor(file)}): each gateway needs its own queue file`,
  });
  await first.append(token('b'));
  await first.close();
  assert.deepEqual(await readdir(dirname(file)), ['pending.log'], 'close removed the lock');

  const again = await RevocationQueue.open(file);
  t.after(() => again.close());
  assert.deepEqual(again.records(), [token('a'), token('b')]);
});

test('a queue lock left by a process that is no longer running does not block the next open', async (t) => {
  const file = await queueFile(t);
  await mkdir(dirname(file), { recursive: true });
  const gone = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => gone.once('exit', resolve));
  const owner = { pid: gone.pid, host: hostname(), since: '2026-01-01T00:00:00.000Z' };
  await writeFile(lockPathFor(file), `${JSON.stringify(owner)}\n`);
  const queue = await RevocationQueue.open(file);
  t.after(() => queue.close());
  await queue.append(token('a'));
  assert.deepEqual(queue.records(), [token('a')]);
});

test('a queue whose lock was taken over refuses to write (appends and drops), reported once', async (t) => {
  const file = await queueFile(t);
  const logged: string[] = [];
  const queue = await RevocationQueue.open(file, (event) => logged.push(event));
  t.after(() => queue.close());
  await queue.append(token('a'));
  await rm(lockPathFor(file));
  const other = { pid: 1, host: 'other-node.example', since: '2026-01-01T00:00:00.000Z' };
  await writeFile(lockPathFor(file), `${JSON.stringify(other)}\n`);
  await assert.rejects(queue.append(token('b')), /taken over by another process/);
  await assert.rejects(queue.drop(1), /taken over by another process/);
  assert.deepEqual(queue.records(), [token('a')]);
  assert.equal((await lines(file)).length, 1);
  assert.deepEqual(logged, ['revocation queue lock lost']);
});
