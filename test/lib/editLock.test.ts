import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { FileLockTimeout, withEditLock } from '../../src/lib/editLock.js';
import { lockPathFor } from '../../src/lib/lockFile.js';

async function tempFile(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-filelock-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'clients.json');
}

/** The pid of a process that has exited (not reused this soon on a test machine). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  assert.ok(child.pid !== undefined);
  return child.pid;
}

function owner(pid: number, host = hostname()): string {
  return `${JSON.stringify({ pid, host, since: '2026-01-01T00:00:00.000Z' })}\n`;
}

describe('withEditLock', () => {
  test('runs concurrent holders one at a time and leaves no lock behind', async (t) => {
    const file = await tempFile(t);
    let inside = 0;
    let most = 0;
    const order: number[] = [];
    await Promise.all(
      [1, 2, 3, 4, 5].map((n) =>
        withEditLock(
          file,
          async () => {
            inside++;
            most = Math.max(most, inside);
            await sleep(10);
            order.push(n);
            inside--;
          },
          { pollMs: 2 },
        ),
      ),
    );
    assert.equal(most, 1);
    assert.deepEqual([...order].sort(), [1, 2, 3, 4, 5]);
    assert.deepEqual(await readdir(join(file, '..')), []);
  });

  test('releases the lock when the work fails, and passes the failure on', async (t) => {
    const file = await tempFile(t);
    await assert.rejects(
      withEditLock(file, async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(await withEditLock(file, async () => 'again', { timeoutMs: 100 }), 'again');
  });

  test('gives up after the timeout, naming the live holder and the lock file', async (t) => {
    const file = await tempFile(t);
    await writeFile(lockPathFor(file), owner(process.pid));
    let ran = false;
    await assert.rejects(
      withEditLock(
        file,
        async () => {
          ran = true;
        },
        { timeoutMs: 100 },
      ),
      (err: unknown) =>
        err instanceof FileLockTimeout &&
        err.message.includes(`pid ${process.pid} on ${hostname()}`) &&
        err.message.includes(lockPathFor(file)),
    );
    assert.equal(ran, false);
  });

  test('takes over a lock left by a process of this host that is no longer running', async (t) => {
    const file = await tempFile(t);
    await writeFile(lockPathFor(file), owner(await deadPid()));
    assert.equal(await withEditLock(file, async () => 'ran', { timeoutMs: 2000 }), 'ran');
    assert.deepEqual(await readdir(join(file, '..')), []);
  });

  test('never takes over a lock of another host', async (t) => {
    const file = await tempFile(t);
    await writeFile(lockPathFor(file), owner(await deadPid(), 'another-host.example'));
    await assert.rejects(
      withEditLock(file, async () => undefined, { timeoutMs: 100 }),
      /held by pid \d+ on another-host\.example/,
    );
  });

  test('an unwritten lock is waited for while young and taken over once old', async (t) => {
    const file = await tempFile(t);
    await writeFile(lockPathFor(file), '');
    await assert.rejects(
      withEditLock(file, async () => undefined, { timeoutMs: 100 }),
      /held by another process/,
    );
    const old = new Date(Date.now() - 120_000);
    await utimes(lockPathFor(file), old, old);
    assert.equal(await withEditLock(file, async () => 'ran', { timeoutMs: 2000 }), 'ran');
  });

  test('a file in a directory that does not exist has nothing to lock: the work runs', async (t) => {
    const file = await tempFile(t);
    const missing = join(file, '..', 'absent', 'clients.json');
    assert.equal(await withEditLock(missing, async () => 'ran', { timeoutMs: 100 }), 'ran');
    assert.deepEqual(await readdir(join(file, '..')), []);
  });
});
