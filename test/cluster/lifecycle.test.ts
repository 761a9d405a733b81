/**
 * A group's (`server.workers` > 1) processes over time: SIGTERM drains every worker (their
 * in-flight requests finish, each answer says `Connection: close`) and the primary exits
 * after the last of them; a worker that dies is logged, counted, replaced, and /readyz
 * says 503 until its replacement listens.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { describe, type TestContext, test } from 'node:test';
import { metric } from '../helpers/metrics.js';
import {
  NOBODY_LISTENS,
  runGateway,
  tempDir,
  waitForStatus,
  writeGatewayFiles,
} from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import {
  accessToken,
  alive,
  protectedRequests,
  send,
  startGroup,
  startUpstream,
  waitForLines,
} from './groupGateway.js';

const WORKERS = 2;

/** An upstream holding every request until `release()`. */
async function holdingUpstream(t: TestContext) {
  const held: (() => void)[] = [];
  let released = false;
  const server: Server = createServer((req, res) => {
    req.resume();
    const answer = () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    };
    if (released) answer();
    else held.push(answer);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((done) => server.close(() => done()));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    held: () => held.length,
    release() {
      released = true;
      for (const answer of held.splice(0)) answer();
    },
  };
}

describe('a group of workers over time', () => {
  test('SIGTERM drains every worker, in-flight requests finish, then the primary exits 0', async (t) => {
    const upstream = await holdingUpstream(t);
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
      server: { shutdownGraceMs: 20_000 },
    });
    const workerPids = group.workerPids();
    assert.equal(workerPids.length, WORKERS);
    const token = await accessToken(group);
    const inFlight = Array.from({ length: 4 * WORKERS }, (_, i) =>
      send(`${group.files.publicUrl}/v1/orders/${i}`, {
        headers: { authorization: `Bearer ${token}`, connection: 'keep-alive' },
      }),
    );
    await waitFor('every request at the upstream', () =>
      upstream.held() === 4 * WORKERS ? true : undefined,
    );

    group.child.kill('SIGTERM');
    await waitForStatus(`${group.files.adminUrl}/readyz`, 503, 10_000);
    await waitForLines(
      group,
      'every worker draining',
      (l) => l.msg === 'shutting down: draining',
      WORKERS + 1,
    );
    upstream.release();
    const answers = await Promise.all(inFlight);
    for (const answer of answers) {
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.connection, 'close');
    }
    const { code } = await group.exited;
    assert.equal(code, 0);
    for (const pid of workerPids) assert.equal(alive(pid), false, `worker ${pid} still runs`);
    // Every worker's "stopped" came through the primary, before the primary's own.
    const stopped = group.lines().filter((l) => l.msg === 'stopped');
    assert.equal(stopped.length, WORKERS + 1);
    assert.equal(group.lines().at(-1)?.msg, 'stopped');
    assert.equal(group.lines().at(-1)?.pid, undefined);
  });

  test('a worker that dies is logged, counted and replaced; /readyz is 503 meanwhile', async (t) => {
    const upstream = await startUpstream(t);
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
    });
    const [victim] = group.workerPids();
    assert.ok(victim !== undefined);
    process.kill(victim, 'SIGKILL');

    const readyz = await waitFor(
      '/readyz 503 while a worker is missing',
      async () => {
        const res = await fetch(`${group.files.adminUrl}/readyz`);
        const body = (await res.json()) as { reason?: string };
        // (Until the primary has seen the exit, the dead worker is one that does not answer.)
        return res.status === 503 && body.reason !== 'a worker did not answer' ? body : undefined;
      },
      10_000,
      10,
    );
    assert.equal(readyz.reason, `${WORKERS - 1} of ${WORKERS} workers listening`);
    const [exit] = await waitForLines(
      group,
      'the exit logged',
      (l) => l.msg === 'worker exited unexpectedly: starting a replacement',
      1,
    );
    assert.equal(exit?.pid, victim);
    assert.equal(exit?.signal, 'SIGKILL');
    assert.equal(exit?.level, 'error');

    await waitForStatus(`${group.files.adminUrl}/readyz`, 200, 60_000);
    const pids = group.workerPids();
    assert.equal(pids.length, WORKERS + 1);
    assert.ok(!pids.slice(WORKERS).includes(victim));
    assert.equal(
      await metric(group.files.adminUrl, 'portaria_worker_restarts_total{cause="signal"}'),
      1,
    );
    assert.equal(
      await metric(group.files.adminUrl, 'portaria_workers{state="listening"}'),
      WORKERS,
    );
    const token = await accessToken(group);
    assert.deepEqual(new Set(await protectedRequests(group, token, 10)), new Set([200]));
  });

  test('a worker that cannot start fails the start: exit 1, its reason on stderr', async (t) => {
    const dir = await tempDir(t, 'portaria-group-');
    // The public port is taken, for the whole test: each worker's listen fails.
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    t.after(() => new Promise<void>((done) => taken.close(() => done())));
    const files = await writeGatewayFiles(dir, [['acme', 'x'.repeat(43), ['orders:read']]], {
      server: { workers: WORKERS, port: (taken.address() as { port: number }).port },
      upstream: { default: { upstream: NOBODY_LISTENS } },
    });
    const proc = runGateway(t, ['--config', files.configFile], { cwd: dir });
    const { code } = await proc.exited;
    assert.equal(code, 1);
    assert.match(proc.stderr(), /server\.host\/server\.port: cannot listen on .*EADDRINUSE/);
    assert.match(proc.stderr(), /portaria: failed to start: worker \d+ exited while starting/);
  });
});
