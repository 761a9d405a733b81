/**
 * WorkerPool with worker processes that die the ways real ones do: before taking a
 * handle the primary sent it, and between their death and the primary seeing it.
 * The primary is a small script around the real WorkerPool; each worker is a script
 * standing in for a gateway worker (the pool only needs its messages).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { tempDir } from '../helpers/process.js';

const POOL_URL = new URL('../../src/cluster/workerPool.js', import.meta.url).href;

/** The primary: the pool's events and the scenario's steps as JSON lines on stdout. */
const PRIMARY = `
import cluster from 'node:cluster';
import { WorkerPool } from ${JSON.stringify(POOL_URL)};
const say = (event, extra = {}) => process.stdout.write(JSON.stringify({ event, ...extra }) + '\\n');
// setupPrimary fixes the policy: the pool's own (workers accept themselves) set first.
cluster.schedulingPolicy = cluster.SCHED_NONE;
cluster.setupPrimary({ exec: process.env.WORKER_SCRIPT });
const pool = new WorkerPool(Number(process.env.WORKERS), {
  message() {},
  started() {},
  replaced: (exit) => say('replaced', { pid: exit.pid }),
});
try {
  await pool.start();
  say('started');
} catch (error) {
  say('start failed', { reason: error.message });
  await pool.stop(1000);
  say('stopped');
  process.exit(0);
}
if (process.env.SCENARIO === 'write-to-the-dead') {
  const [worker] = pool.listeningWorkers();
  process.kill(worker.process.pid, 'SIGKILL');
  // Dead for the kernel, alive for the primary until its event loop turns.
  const until = Date.now() + 200;
  while (Date.now() < until) {}
  for (let i = 0; i < 20; i++) pool.send(worker, { portaria: 'reload' });
  say('sent', { answer: (await pool.ask(worker, (id) => ({ portaria: 'query', id, what: 'readiness' }), 500)) ?? null });
  await new Promise((resolve) => setTimeout(resolve, 300));
  await pool.stop(1000);
  say('stopped');
  process.exit(0);
}
`;

/** A worker that says it listens and idles; or one that dies holding an unacknowledged handle. */
const WORKER = `
import cluster from 'node:cluster';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
if (process.env.SCENARIO === 'dies-before-taking-its-handle') {
  // The second worker asks the primary for a listening socket (node:cluster binds it
  // and sends it as a handle; a Unix socket's path asks at once, a host name only after
  // its lookup) and stays busy; once the socket exists, the first fails its start, and
  // the primary's SIGTERM ends the second with the handle never acknowledged.
  if (cluster.worker.id === 1) {
    setInterval(() => {
      if (existsSync(process.env.SOCKET_PATH)) process.exit(1);
    }, 10);
  } else {
    createServer().listen(process.env.SOCKET_PATH);
    const until = Date.now() + 5000;
    while (Date.now() < until) {}
    process.exit(1);
  }
} else {
  process.send({ portaria: 'listening', publicUrl: 'http://127.0.0.1:1' });
  setInterval(() => {}, 60_000);
  process.on('message', (message) => {
    if (message.portaria === 'shutdown') process.exit(0);
  });
}
`;

interface Line {
  readonly event: string;
  readonly [field: string]: unknown;
}

async function runPrimary(
  t: TestContext,
  scenario: string,
  workers: number,
): Promise<{ code: number | null; lines: Line[]; stderr: string }> {
  const dir = await tempDir(t, 'portaria-pool-');
  await writeFile(join(dir, 'primary.mjs'), PRIMARY);
  await writeFile(join(dir, 'worker.mjs'), WORKER);
  const child = spawn(process.execPath, [join(dir, 'primary.mjs')], {
    env: {
      ...process.env,
      SCENARIO: scenario,
      WORKERS: String(workers),
      WORKER_SCRIPT: join(dir, 'worker.mjs'),
      SOCKET_PATH: join(dir, 'worker.sock'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  // Bounded: a pool that never stops is the failure, not a hung test.
  const bound = setTimeout(() => {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  }, 15_000);
  t.after(() => {
    clearTimeout(bound);
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  });
  const code = await exited;
  clearTimeout(bound);
  const lines = out
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Line);
  return { code, lines, stderr: err };
}

describe('WorkerPool with workers that die badly', () => {
  // node:cluster never emits `disconnect` for a worker that exits with a handle sent to it
  // and not yet acknowledged (lib/internal/child_process.js: the disconnect waits for the
  // handle queue): a pool waiting for it never stopped.
  test('a worker stopped before taking the handle sent to it: the failed start still stops the pool', async (t) => {
    const { code, lines, stderr } = await runPrimary(t, 'dies-before-taking-its-handle', 2);
    assert.equal(code, 0, stderr);
    assert.deepEqual(
      lines.map((l) => l.event),
      ['start failed', 'stopped'],
    );
    assert.match(String(lines[0]?.reason), /^worker \d exited while starting \(code 1/);
  });

  test('messages to a worker dead but not yet seen exiting: no answer, the primary lives on and replaces it', async (t) => {
    const { code, lines, stderr } = await runPrimary(t, 'write-to-the-dead', 1);
    assert.equal(code, 0, stderr);
    const events = lines.map((l) => l.event);
    assert.equal(events[0], 'started');
    assert.equal(events.at(-1), 'stopped');
    // The exit may be seen before or after the unanswered question settles.
    assert.deepEqual(events.slice(1, -1).sort(), ['replaced', 'sent']);
    assert.equal(lines.find((l) => l.event === 'sent')?.answer, null);
  });
});
