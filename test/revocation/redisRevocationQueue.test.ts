/**
 * The durable queue of revocations waiting for Redis: fsynced appends in the local log's
 * line format, created only when first needed, partial drops that keep later records,
 * and a torn last line (a crash mid-append, never acknowledged) reported and skipped.
 */
import assert from 'node:assert/strict';
import { appendFile, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type TestContext, test } from 'node:test';
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
