/**
 * The lock a running gateway holds on its revocation files: one holder at a time, in
 * this process or another; released on release() and at exit; a lock left by a process
 * that is gone (SIGKILL, a reused pid, an earlier run with our pid, a holder that stopped
 * refreshing) is taken over, a live one never; a lock removed under its holder is lost.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { lockPathFor } from '../../src/lib/lockFile.js';
import { FileInUse, holdWriterLock } from '../../src/lib/writerLock.js';
import { waitFor } from '../helpers/wait.js';

const LINUX = existsSync('/proc/self/stat') && existsSync('/proc/sys/kernel/random/boot_id');
/** What this process writes into its locks besides pid, host and since (Linux). */
const ME = LINUX
  ? {
      boot: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
      pidns: readlinkSync('/proc/self/ns/pid'),
    }
  : {};
const MODULE = new URL('../../src/lib/writerLock.js', import.meta.url).href;

async function tempFile(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-heldlock-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'revocations.log');
}

function ownerText(fields: Record<string, unknown>): string {
  const owner = { host: hostname(), since: '2026-01-01T00:00:00.000Z', ...ME, ...fields };
  return `${JSON.stringify(owner)}\n`;
}

async function age(path: string, ms: number): Promise<void> {
  const then = new Date(Date.now() - ms);
  await utimes(path, then, then);
}

/** The pid of a process that has exited (not reused this soon on a test machine). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  assert.ok(child.pid !== undefined);
  return child.pid;
}

/** A child that takes the lock of `file`, says so, then idles (or exits with `then: 'exit'`). */
async function holderProcess(
  t: TestContext,
  file: string,
  then: 'idle' | 'exit' = 'idle',
): Promise<{ child: ChildProcess; exited: Promise<NodeJS.Signals | null> }> {
  const code = [
    `const { holdWriterLock } = await import(${JSON.stringify(MODULE)});`,
    'await holdWriterLock(process.argv[1]);',
    "process.stdout.write('held\\n');",
    "if (process.argv[2] === 'exit') process.exit(0);",
    'setInterval(() => {}, 60_000);',
  ].join('\n');
  const child = spawn(process.execPath, ['--input-type=module', '-e', code, file, then], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('exit', (_code, signal) => resolve(signal)),
  );
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  await waitFor('the child holds the lock', () => (out.includes('held') ? true : undefined), 5000);
  return { child, exited };
}

function inUse(holder: RegExp) {
  return (error: unknown) => error instanceof FileInUse && holder.test(error.holder);
}

describe('holdWriterLock', () => {
  test('a second holder in this process is refused; after release the lock file is gone and can be taken again', async (t) => {
    const file = await tempFile(t);
    const lock = await holdWriterLock(file);
    await assert.rejects(holdWriterLock(file), (error: unknown) => {
      assert.ok(error instanceof FileInUse);
      assert.equal(error.holder, `this process (pid ${process.pid})`);
      assert.equal(error.lockPath, lockPathFor(file));
      assert.match(error.message, /revocations\.log is in use by this process/);
      return true;
    });
    assert.equal(await lock.check(), true);
    await lock.release();
    assert.deepEqual(await readdir(join(file, '..')), []);
    const again = await holdWriterLock(file);
    t.after(() => again.release());
    assert.equal(await again.check(), true);
  });

  test('two concurrent attempts in this process: exactly one holds the lock', async (t) => {
    const file = await tempFile(t);
    const results = await Promise.allSettled([holdWriterLock(file), holdWriterLock(file)]);
    const held = results.filter((r) => r.status === 'fulfilled');
    assert.equal(held.length, 1);
    t.after(() =>
      (held[0] as PromiseFulfilledResult<{ release(): Promise<void> }>).value.release(),
    );
    assert.ok(results.some((r) => r.status === 'rejected' && r.reason instanceof FileInUse));
  });

  test('a holder in another process is refused naming its pid; once it is SIGKILLed the lock is taken over', async (t) => {
    const file = await tempFile(t);
    const { child, exited } = await holderProcess(t, file);
    const owner = JSON.parse(await readFile(lockPathFor(file), 'utf8')) as { pid: number };
    assert.equal(owner.pid, child.pid);
    await assert.rejects(holdWriterLock(file), inUse(new RegExp(`^pid ${child.pid} on `)));
    child.kill('SIGKILL');
    assert.equal(await exited, 'SIGKILL');
    const lock = await holdWriterLock(file);
    t.after(() => lock.release());
    assert.equal(
      (JSON.parse(await readFile(lockPathFor(file), 'utf8')) as { pid: number }).pid,
      process.pid,
    );
  });

  test('a process that ends with process.exit leaves no lock behind', async (t) => {
    const file = await tempFile(t);
    const { exited } = await holderProcess(t, file, 'exit');
    assert.equal(await exited, null);
    assert.deepEqual(await readdir(join(file, '..')), []);
  });

  test('a lock of a process that is no longer running is taken over', async (t) => {
    const file = await tempFile(t);
    await writeFile(lockPathFor(file), ownerText({ pid: await deadPid() }));
    const lock = await holdWriterLock(file);
    t.after(() => lock.release());
  });

  test("a lock with this process's pid that this process does not hold is taken over (an earlier run: pid 1 of a restarted container)", async (t) => {
    const file = await tempFile(t);
    // Another pid namespace (a restarted container) and written a second ago.
    await writeFile(lockPathFor(file), ownerText({ pid: process.pid, pidns: 'pid:[1]' }));
    const lock = await holdWriterLock(file);
    t.after(() => lock.release());
  });

  test('a lock of another host is refused while it is refreshed and taken over once older than staleMs', async (t) => {
    const file = await tempFile(t);
    const lockPath = lockPathFor(file);
    await writeFile(lockPath, ownerText({ pid: process.pid, host: 'other-node.example' }));
    await age(lockPath, 5_000);
    await assert.rejects(
      holdWriterLock(file, { staleMs: 60_000 }),
      inUse(/^pid \d+ on other-node\.example since /),
    );
    await age(lockPath, 61_000);
    const lock = await holdWriterLock(file, { staleMs: 60_000 });
    t.after(() => lock.release());
  });

  test('an unwritten lock is refused while young and taken over once older than 30 s', async (t) => {
    const file = await tempFile(t);
    await writeFile(lockPathFor(file), '');
    await assert.rejects(holdWriterLock(file), inUse(/^another process$/));
    await age(lockPathFor(file), 31_000);
    const lock = await holdWriterLock(file);
    t.after(() => lock.release());
  });

  test('a file whose directory does not exist cannot be locked (ENOENT)', async (t) => {
    const file = await tempFile(t);
    await assert.rejects(holdWriterLock(join(file, '..', 'absent', 'x.log')), { code: 'ENOENT' });
  });

  test('the holder refreshes the lock, and finds it lost once another process replaced it', async (t) => {
    const file = await tempFile(t);
    let lost = 0;
    const lock = await holdWriterLock(file, { refreshMs: 20, onLost: () => lost++ });
    t.after(() => lock.release());
    const lockPath = lockPathFor(file);
    await age(lockPath, 120_000);
    await waitFor(
      'the lock refreshed',
      async () => (Date.now() - (await stat(lockPath)).mtimeMs < 60_000 ? true : undefined),
      2000,
    );
    await rm(lockPath);
    await writeFile(lockPath, ownerText({ pid: 1, host: 'other-node.example' }));
    await waitFor('the loss noticed', () => (lost > 0 ? true : undefined), 2000);
    assert.equal(await lock.check(), false);
    await lock.release();
    assert.equal(lost, 1);
    assert.match(await readFile(lockPath, 'utf8'), /other-node\.example/, 'the new lock is kept');
  });

  describe('Linux: pid namespaces and pid reuse', { skip: !LINUX }, () => {
    test('a live pid running a process started at another tick is a reused pid: taken over', async (t) => {
      const file = await tempFile(t);
      const { child } = await holderProcess(t, join(file, '..', 'other.log'));
      await writeFile(lockPathFor(file), ownerText({ pid: child.pid, start: '1' }));
      const lock = await holdWriterLock(file);
      t.after(() => lock.release());
    });

    test('a lock from another pid namespace is judged by its refresh only, even if its pid is not running here', async (t) => {
      const file = await tempFile(t);
      const lockPath = lockPathFor(file);
      await writeFile(lockPath, ownerText({ pid: await deadPid(), pidns: 'pid:[1]' }));
      await assert.rejects(holdWriterLock(file), inUse(/^pid \d+ on /));
      await age(lockPath, 61_000);
      const lock = await holdWriterLock(file);
      t.after(() => lock.release());
    });

    test('a lock with our pid written on another boot of this host is judged by its refresh only', async (t) => {
      const file = await tempFile(t);
      const lockPath = lockPathFor(file);
      await writeFile(lockPath, ownerText({ pid: process.pid, boot: 'another-boot' }));
      await assert.rejects(holdWriterLock(file), inUse(/^pid \d+ on /));
    });
  });
});
