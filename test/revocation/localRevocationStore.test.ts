import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { epochSeconds, ManualClock } from '../../src/lib/clock.js';
import { lockPathFor } from '../../src/lib/lockFile.js';
import { LocalRevocationStore } from '../../src/revocation/localRevocationStore.js';
import { decodeRevocationLine } from '../../src/revocation/revocationLogRecord.js';
import { NFC_ID, NFD_ID, UNICODE_CLIENT_IDS } from '../helpers/unicodeIds.js';

const HOUR = 3600;

async function logFile(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-revocation-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'data', 'revocations.log');
}

interface Logged {
  event: string;
  detail: Record<string, unknown>;
}

async function openStore(
  t: TestContext,
  file: string,
  clock: ManualClock,
  options: { compactRatio?: number; compactMinLines?: number } = {},
): Promise<{ store: LocalRevocationStore; logged: Logged[] }> {
  const logged: Logged[] = [];
  const store = await LocalRevocationStore.open(file, clock, {
    ...options,
    log: (event, detail) => logged.push({ event, detail }),
  });
  t.after(() => store.close());
  return { store, logged };
}

function token(tokenId: string, clientId = 'acme', issuedAt = 0) {
  return { tokenId, clientId, issuedAt };
}

/** The file's lines, asserting each one is a valid record and the file ends in a newline. */
async function validLines(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8');
  if (text === '') return [];
  assert.ok(text.endsWith('\n'), 'the file ends with a newline');
  const lines = text.slice(0, -1).split('\n');
  for (const line of lines) assert.ok(decodeRevocationLine(line), `valid line: ${line}`);
  return lines;
}

test('revocations survive closing and reopening the store', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const exp = epochSeconds(clock) + HOUR;
  const first = await LocalRevocationStore.open(file, clock);
  await first.revokeToken('jti-1', exp);
  await first.revokeClient('acme', 1000, exp);
  await first.close();

  const { store, logged } = await openStore(t, file, clock);
  assert.equal(store.isRevoked(token('jti-1', 'other')), true);
  assert.equal(store.isRevoked(token('jti-2', 'acme', 999)), true);
  assert.equal(store.isRevoked(token('jti-2', 'other', 999)), false);
  assert.deepEqual(store.entries(), {
    tokens: [{ tokenId: 'jti-1', expiresAt: exp }],
    clients: [{ clientId: 'acme', issuedBefore: 1000, expiresAt: exp }],
  });
  assert.equal(store.size(), 2);
  assert.deepEqual(logged, []);
});

test('a new log gets a 0700 directory and a 0600 file', async (t) => {
  const file = await logFile(t);
  const { store } = await openStore(t, file, new ManualClock());
  await store.revokeToken('jti-1', epochSeconds(new ManualClock()) + HOUR);
  assert.equal((await stat(dirname(file))).mode & 0o777, 0o700);
  assert.equal((await stat(file)).mode & 0o777, 0o600);
});

test('a revocation acknowledged just before SIGKILL is still there after restart', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const script = join(dirname(fileURLToPath(import.meta.url)), 'revokeAndWait.js');
  const child = spawn(
    process.execPath,
    [script, file, 'jti-killed', String(epochSeconds(clock) + HOUR)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  t.after(() => child.kill('SIGKILL'));
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on('exit', (_code, signal) => resolve(signal)),
  );
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('acked')) {
        child.kill('SIGKILL');
        resolve();
      }
    });
    child.on('exit', () => reject(new Error(`child exited before acking: ${out}`)));
  });
  assert.equal(await exited, 'SIGKILL');

  const { store } = await openStore(t, file, clock);
  assert.equal(store.isRevoked(token('jti-killed')), true);
});

test('a log cut mid-line keeps the entries before the cut, reports it, and appends cleanly after', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const exp = epochSeconds(clock) + HOUR;
  const first = await LocalRevocationStore.open(file, clock);
  for (const id of ['a', 'b', 'c']) await first.revokeToken(id, exp);
  await first.close();
  const text = await readFile(file, 'utf8');
  await writeFile(file, text.slice(0, text.length - 7));

  const { store, logged } = await openStore(t, file, clock);
  assert.deepEqual(
    ['a', 'b', 'c'].map((id) => store.isRevoked(token(id))),
    [true, true, false],
  );
  assert.deepEqual(logged, [
    { event: 'revocation log tail corrupt', detail: { file, line: 3, dropped: 1, kept: 2 } },
  ]);
  assert.equal((await validLines(file)).length, 2, 'the torn tail is gone from the file');
  await store.revokeToken('d', exp);
  await store.close();

  const { store: again, logged: loggedAgain } = await openStore(t, file, clock);
  assert.deepEqual(
    ['a', 'b', 'c', 'd'].map((id) => again.isRevoked(token(id))),
    [true, true, false, true],
  );
  assert.deepEqual(loggedAgain, []);
  assert.equal((await validLines(file)).length, 3);
});

test('a last line with a wrong checksum is dropped and reported; earlier entries are kept', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const exp = epochSeconds(clock) + HOUR;
  const first = await LocalRevocationStore.open(file, clock);
  for (const id of ['a', 'b']) await first.revokeToken(id, exp);
  await first.close();
  const lines = (await readFile(file, 'utf8')).split('\n');
  const last = lines[1] ?? '';
  lines[1] = (last[0] === '0' ? '1' : '0') + last.slice(1);
  await writeFile(file, lines.join('\n'));

  const { store, logged } = await openStore(t, file, clock);
  assert.deepEqual([store.isRevoked(token('a')), store.isRevoked(token('b'))], [true, false]);
  assert.deepEqual(logged, [
    { event: 'revocation log tail corrupt', detail: { file, line: 2, dropped: 1, kept: 1 } },
  ]);
  await store.revokeToken('c', exp);
  await store.close();
  const { store: again } = await openStore(t, file, clock);
  assert.deepEqual([again.isRevoked(token('a')), again.isRevoked(token('c'))], [true, true]);
  assert.equal((await validLines(file)).length, 2);
});

test('a corrupt line in the middle is reported and skipped; the valid lines after it are kept', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const exp = epochSeconds(clock) + HOUR;
  const first = await LocalRevocationStore.open(file, clock);
  for (const id of ['a', 'b', 'c']) await first.revokeToken(id, exp);
  await first.close();
  const lines = (await readFile(file, 'utf8')).split('\n');
  lines[1] = (lines[1] ?? '').replace('"b"', '"x"');
  await writeFile(file, lines.join('\n'));

  const { store, logged } = await openStore(t, file, clock);
  assert.deepEqual(
    ['a', 'b', 'x', 'c'].map((id) => store.isRevoked(token(id))),
    [true, false, false, true],
  );
  assert.deepEqual(logged, [
    { event: 'revocation log line corrupt', detail: { file, line: 2, dropped: 1, kept: 2 } },
  ]);
  assert.equal((await validLines(file)).length, 2);
});

test('entries already expired are not loaded', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const now = epochSeconds(clock);
  const first = await LocalRevocationStore.open(file, clock);
  await first.revokeToken('short', now + 10);
  await first.revokeToken('long', now + HOUR);
  await first.revokeClient('acme', now, now + 10);
  await first.close();
  clock.advance(11_000);

  const { store } = await openStore(t, file, clock);
  assert.equal(store.isRevoked(token('short')), false);
  assert.equal(store.isRevoked(token('long')), true);
  assert.equal(store.isRevoked(token('any', 'acme', now - 1)), false);
  assert.equal(store.size(), 1);
  assert.deepEqual(store.entries(), {
    tokens: [{ tokenId: 'long', expiresAt: now + HOUR }],
    clients: [],
  });
});

test('sweep drops expired entries and compacts the log once it is mostly dead', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const now = epochSeconds(clock);
  const { store, logged } = await openStore(t, file, clock);
  await Promise.all(
    Array.from({ length: 1000 }, (_, i) => store.revokeToken(`short-${i}`, now + 60)),
  );
  await store.revokeToken('long', now + HOUR);
  await store.revokeClient('acme', now, now + HOUR);
  await store.sweep();
  assert.equal((await validLines(file)).length, 1002, 'nothing expired yet: no compaction');
  const sizeBefore = (await stat(file)).size;

  clock.advance(61_000);
  await store.sweep();
  assert.equal(store.size(), 2);
  assert.equal((await validLines(file)).length, 2);
  assert.ok((await stat(file)).size < sizeBefore / 100);
  assert.deepEqual(logged, [
    { event: 'revocation log compacted', detail: { file, before: 1002, after: 2 } },
  ]);

  await store.revokeToken('after', now + HOUR);
  await store.close();
  const { store: again } = await openStore(t, file, clock);
  assert.deepEqual(
    ['short-0', 'long', 'after'].map((id) => again.isRevoked(token(id, 'other'))),
    [false, true, true],
  );
  assert.equal(again.isRevoked(token('x', 'acme', now)), true);
  assert.equal((await validLines(file)).length, 3);
});

test('a small log is not compacted below compactMinLines, even when all dead', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const { store } = await openStore(t, file, clock);
  for (const id of ['a', 'b', 'c']) await store.revokeToken(id, epochSeconds(clock) + 1);
  clock.advance(5_000);
  await store.sweep();
  assert.equal(store.size(), 0);
  assert.equal((await validLines(file)).length, 3);
});

test('compaction at open with a low compactMinLines', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const now = epochSeconds(clock);
  const first = await LocalRevocationStore.open(file, clock);
  for (let i = 0; i < 10; i++) await first.revokeToken(`t-${i}`, i === 0 ? now + HOUR : now + 1);
  await first.close();
  clock.advance(5_000);
  const { store, logged } = await openStore(t, file, clock, { compactMinLines: 5 });
  assert.equal(store.size(), 1);
  assert.equal((await validLines(file)).length, 1);
  assert.deepEqual(logged, [
    { event: 'revocation log compacted', detail: { file, before: 10, after: 1 } },
  ]);
});

test('200 concurrent revocations are all durable, one valid line each', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const exp = epochSeconds(clock) + HOUR;
  const first = await LocalRevocationStore.open(file, clock);
  await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      i % 2 === 0
        ? first.revokeToken(`jti-${i}`, exp)
        : first.revokeClient(`client-${i}`, 100, exp),
    ),
  );
  await first.close();
  assert.equal((await validLines(file)).length, 200);

  const { store, logged } = await openStore(t, file, clock);
  assert.equal(store.size(), 200);
  for (let i = 0; i < 200; i++) {
    const revoked =
      i % 2 === 0
        ? store.isRevoked(token(`jti-${i}`))
        : store.isRevoked(token('z', `client-${i}`, 100));
    assert.equal(revoked, true, `entry ${i}`);
  }
  assert.deepEqual(logged, []);
});

test('a client cut-off revokes tokens issued at or before it, only for that client, and never moves back', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const exp = epochSeconds(clock) + HOUR;
  const { store } = await openStore(t, file, clock);
  await store.revokeClient('acme', 1000, exp);
  await store.revokeClient('acme', 500, exp - 10);
  const cases = [
    { name: 'issued before the cut-off', t: token('x', 'acme', 999), revoked: true },
    { name: 'issued at the cut-off', t: token('x', 'acme', 1000), revoked: true },
    { name: 'issued after the cut-off', t: token('x', 'acme', 1001), revoked: false },
    { name: 'another client', t: token('x', 'reader', 1), revoked: false },
  ];
  for (const c of cases) assert.equal(store.isRevoked(c.t), c.revoked, c.name);
  assert.deepEqual(store.entries().clients, [
    { clientId: 'acme', issuedBefore: 1000, expiresAt: exp },
  ]);
  await store.close();
  const { store: again } = await openStore(t, file, clock);
  for (const c of cases) assert.equal(again.isRevoked(c.t), c.revoked, `${c.name}, after reopen`);
});

test('revocations after close() reject', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const { store } = await openStore(t, file, clock);
  await store.close();
  await assert.rejects(store.revokeToken('late', epochSeconds(clock) + HOUR), /closed/);
  await assert.rejects(store.revokeClient('acme', 1, epochSeconds(clock) + HOUR), /closed/);
  assert.equal(store.isRevoked(token('late')), false);
});

test('an unusable log path fails open() with a ConfigError naming revocation.file', async (t) => {
  const file = await logFile(t);
  await LocalRevocationStore.open(file, new ManualClock()).then((s) => s.close());
  await assert.rejects(LocalRevocationStore.open(join(file, 'nested.log'), new ManualClock()), {
    name: 'ConfigError',
    message: /revocation\.file: cannot open/,
  });
});

/**
 * Starts `revokeAndWait.js` (a store in another process): resolves once it acknowledged
 * `tokenId`, with the child (killed in `t.after`) and its exit signal.
 */
async function storeInAnotherProcess(t: TestContext, file: string, tokenId: string, exp: number) {
  const script = join(dirname(fileURLToPath(import.meta.url)), 'revokeAndWait.js');
  const child = spawn(process.execPath, [script, file, tokenId, String(exp)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on('exit', (_code, signal) => resolve(signal)),
  );
  t.after(() => child.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no ack within 10 s: ${out}`)), 10_000);
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('acked')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', () => reject(new Error(`child exited before acking: ${out}`)));
  });
  return { child, exited };
}

test('a second store on the same file is refused naming the file and the holder; the first keeps every acknowledged revocation', async (t) => {
  // The reviewer's sequence: the second open used to compact the file under the first,
  // whose later acknowledged revocations went to the replaced file and were lost.
  const file = await logFile(t);
  const clock = new ManualClock();
  const exp = epochSeconds(clock) + HOUR;
  const options = { compactMinLines: 1, compactRatio: 1 };
  const first = await LocalRevocationStore.open(file, clock, options);
  await first.revokeToken('x', exp);
  await first.revokeToken('x', exp); // a duplicate line: the file is due for compaction
  await assert.rejects(LocalRevocationStore.open(file, clock, options), {
    name: 'ConfigError',
    message:
      `invalid configuration:\n  - revocation.file: ${file} is in use by this process ` +
      `(pid ${process.pid}) (lock ${lockPathFor(file)}): two gateways must not share one ` +
      'revocation file; stop the other one or give each its own file',
  });
  await first.revokeToken('y', exp);
  await first.close();
  assert.deepEqual(await readdir(dirname(file)), ['revocations.log'], 'close removed the lock');

  const { store } = await openStore(t, file, clock, options);
  assert.equal(store.isRevoked(token('x')), true);
  assert.equal(store.isRevoked(token('y')), true);
});

test('a store open in another process refuses this one naming its pid; once that process is SIGKILLed the file opens with its revocation', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const { child, exited } = await storeInAnotherProcess(
    t,
    file,
    'jti-other',
    epochSeconds(clock) + HOUR,
  );
  await assert.rejects(LocalRevocationStore.open(file, clock), (error: Error) => {
    assert.equal(error.name, 'ConfigError');
    assert.match(
      error.message,
      new RegExp(
        `revocation\\.file: ${file} is in use by pid ${child.pid} on ${hostname()} since `,
      ),
    );
    return true;
  });
  child.kill('SIGKILL');
  assert.equal(await exited, 'SIGKILL');
  const { store } = await openStore(t, file, clock);
  assert.equal(store.isRevoked(token('jti-other')), true);
});

test('a lock left by a process that is no longer running does not block the next open', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  await LocalRevocationStore.open(file, clock).then((s) => s.close());
  const gone = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => gone.once('exit', resolve));
  const owner = { pid: gone.pid, host: hostname(), since: '2026-01-01T00:00:00.000Z' };
  await writeFile(lockPathFor(file), `${JSON.stringify(owner)}\n`);
  const { store } = await openStore(t, file, clock);
  await store.revokeToken('after', epochSeconds(clock) + HOUR);
  assert.equal(
    (JSON.parse(await readFile(lockPathFor(file), 'utf8')) as { pid: number }).pid,
    process.pid,
  );
});

test('a lock taken over while the store is open: later revocations are refused (still enforced here), reported once, and the file is left alone', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const exp = epochSeconds(clock) + HOUR;
  const { store, logged } = await openStore(t, file, clock);
  await store.revokeToken('before', exp);
  const other = { pid: 1, host: 'other-node.example', since: '2026-01-01T00:00:00.000Z' };
  await rm(lockPathFor(file));
  await writeFile(lockPathFor(file), `${JSON.stringify(other)}\n`);
  const contents = await readFile(file, 'utf8');

  await assert.rejects(store.revokeToken('after', exp), /taken over by another process/);
  await assert.rejects(store.revokeClient('acme', 1, exp), /taken over by another process/);
  assert.equal(store.isRevoked(token('after')), true, 'enforced in memory');
  assert.equal(await readFile(file, 'utf8'), contents);
  assert.deepEqual(logged, [
    { event: 'revocation log lock lost', detail: { file, lock: lockPathFor(file) } },
  ]);
  await store.close();
  assert.match(await readFile(lockPathFor(file), 'utf8'), /other-node/, "the other's lock stays");
});

test('client revocations by Unicode id survive a reopen byte for byte; NFC and NFD are two entries', async (t) => {
  const file = await logFile(t);
  const clock = new ManualClock();
  const exp = epochSeconds(clock) + HOUR;
  const first = await LocalRevocationStore.open(file, clock);
  const ids = UNICODE_CLIENT_IDS.map(([, id]) => id);
  for (const id of ids) await first.revokeClient(id, 1000, exp);
  await first.revokeClient(NFC_ID, 1000, exp);
  await first.close();

  const { store, logged } = await openStore(t, file, clock);
  assert.deepEqual(logged, []);
  for (const id of [...ids, NFC_ID]) assert.equal(store.isRevoked(token('j', id, 1000)), true, id);
  assert.equal(store.isRevoked(token('j', NFD_ID, 1000)), false, 'NFD is another client');
  await store.revokeClient(NFD_ID, 500, exp);
  assert.equal(store.isRevoked(token('j', NFD_ID, 501)), false, 'NFD has its own cut-off');
  assert.equal(store.isRevoked(token('j', NFC_ID, 501)), true, 'NFC keeps its cut-off');
  assert.deepEqual(
    store.entries().clients.map((c) => [c.clientId, c.issuedBefore]),
    [...ids.map((id) => [id, 1000]), [NFC_ID, 1000], [NFD_ID, 500]],
  );
  const text = await readFile(file, 'utf8');
  assert.ok(text.includes(JSON.stringify(NFD_ID)), 'stored as UTF-8 JSON, not normalised');
});
