/**
 * Graceful shutdown of the real process (`node dist-test/src/main.js --config FILE`): on
 * SIGTERM readiness turns 503, the listener stops accepting, in-flight requests finish
 * within `server.shutdownGraceMs` (or are cut at its end) and the process exits 0.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Agent, createServer, request, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import { runGateway, tempDir, waitForStatus, writeGatewayFiles } from '../helpers/process.js';
import { headerOf, onlyResponse } from '../helpers/rawResponse.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'shutdown-secret-0123456789abcdefghijklmnopqrstu';

interface SlowUpstream {
  url: string;
  /** Paths received so far. */
  arrivals: string[];
  /** Requests whose connection closed before the answer was sent. */
  cut: number;
  /** Answers every held request now (and every later one at once). */
  release(): void;
}

/** Holds every request until `release()` or until `maxHoldMs` passed, then answers `{path}`. */
async function slowUpstream(t: TestContext, maxHoldMs: number): Promise<SlowUpstream> {
  const held = new Set<() => void>();
  let released = false;
  const upstream: SlowUpstream = {
    url: '',
    arrivals: [],
    cut: 0,
    release() {
      released = true;
      for (const answer of held) answer();
    },
  };
  const server: Server = createServer((req, res) => {
    upstream.arrivals.push(req.url ?? '');
    req.resume();
    const answer = () => {
      held.delete(answer);
      clearTimeout(timer);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ path: req.url }));
    };
    const timer = setTimeout(answer, maxHoldMs);
    held.add(answer);
    res.on('close', () => {
      held.delete(answer);
      clearTimeout(timer);
      if (!res.writableFinished) upstream.cut++;
    });
    if (released) answer();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((done) => server.close(() => done()));
  });
  upstream.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return upstream;
}

async function startProcess(
  t: TestContext,
  upstreamUrl: string,
  shutdownGraceMs: number,
  keepAliveTimeoutMs = 1000,
) {
  const dir = await tempDir(t, 'portaria-shutdown-');
  const { configFile } = await writeGatewayFiles(dir, [['acme', SECRET, ['orders:read']]], {
    server: { shutdownGraceMs, keepAliveTimeoutMs },
    upstream: { default: { upstream: upstreamUrl } },
    log: { level: 'info' },
  });
  const proc = runGateway(t, ['--config', configFile], { cwd: dir });
  const files = await proc.listening();
  await waitForStatus(`${files.adminUrl}/readyz`, 200);
  // On a connection of its own that closes after the answer: none is left idle to hold a stop.
  const { status, body } = await new Promise<{ status: number; body: string }>(
    (resolve, reject) => {
      const req = request(
        `${files.publicUrl}/v1/authentication/accesstoken`,
        { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ clientId: 'acme', clientSecret: SECRET }));
    },
  );
  assert.equal(status, 200);
  const token = (JSON.parse(body) as { token_de_acesso: string }).token_de_acesso;
  return { proc, files, token };
}

/** Resolves with the connection error code (e.g. ECONNREFUSED), or 'connected'. */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket: Socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });
}

function logMessages(stdout: string): string[] {
  return stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (JSON.parse(line) as { msg: string }).msg);
}

describe('shutdown of the real process', () => {
  test('SIGTERM drains: in-flight requests finish 200, /readyz 503, new connections refused, exit 0', async (t) => {
    // Held until the drain was observed (at most 2.5 s), so they are surely in flight.
    const upstream = await slowUpstream(t, 2500);
    const graceMs = 3000;
    const { proc, files, token } = await startProcess(t, upstream.url, graceMs);

    let finished = 0;
    const inFlight = Array.from({ length: 20 }, async (_, i) => {
      const res = await fetch(`${files.publicUrl}/v1/orders/${i}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const body = (await res.json()) as { path: string };
      finished++;
      return { status: res.status, path: body.path };
    });
    await waitFor('20 requests at the upstream', () =>
      upstream.arrivals.length === 20 ? true : undefined,
    );

    const signalledAt = performance.now();
    proc.child.kill('SIGTERM');
    const readyzDuringDrain = await waitFor(
      '/readyz 503',
      async () => {
        const res = await fetch(`${files.adminUrl}/readyz`).catch(() => null);
        if (res === null) return undefined;
        const body = await res.text();
        return res.status === 503 ? { finishedBefore: finished, body } : undefined;
      },
      2000,
      10,
    );
    assert.equal(readyzDuringDrain.finishedBefore, 0, '503 seen while requests were in flight');
    assert.deepEqual(JSON.parse(readyzDuringDrain.body), {
      status: 'not ready',
      reason: 'shutting down',
    });
    assert.equal(await tryConnect(files.publicPort), 'ECONNREFUSED');
    upstream.release();

    const results = await Promise.all(inFlight);
    assert.deepEqual(
      results,
      Array.from({ length: 20 }, (_, i) => ({ status: 200, path: `/v1/orders/${i}` })),
    );
    const { code, signal } = await proc.exited;
    const exitMs = performance.now() - signalledAt;
    assert.equal(signal, null);
    assert.equal(code, 0);
    assert.ok(exitMs < graceMs + 2000, `exited after ${exitMs} ms`);
    assert.equal(upstream.cut, 0);

    const messages = logMessages(proc.stdout());
    const draining = messages.findIndex((m) => m.startsWith('shutting down'));
    assert.ok(draining >= 0, 'logged "shutting down"');
    assert.ok(messages.indexOf('stopped') > draining, 'logged "stopped" after "shutting down"');
    assert.ok(!messages.includes('grace period over: closing remaining connections'));
    // Access lines are batched: shutdown writes the last batch, and the lines of requests
    // finishing while it stops, before the process exits.
    const drained = messages.filter((m) => m === 'request').length;
    assert.ok(drained >= 21, `${drained} access lines, want the token request and the 20 drained`);
    assert.equal(messages.at(-1), 'stopped', 'every access line is written before "stopped"');
  });

  for (const [first, second] of [
    ['SIGTERM', 'SIGINT'],
    ['SIGTERM', 'SIGTERM'],
    ['SIGINT', 'SIGINT'],
  ] as const) {
    test(`a second stop signal during the drain waits for the same drain (${first}, then ${second})`, async (t) => {
      const upstream = await slowUpstream(t, 10_000);
      const { proc, files, token } = await startProcess(t, upstream.url, 5000);
      const inFlight = fetch(`${files.publicUrl}/v1/orders/held`, {
        headers: { authorization: `Bearer ${token}` },
      }).then((res) => res.status);
      await waitFor('the request at the upstream', () =>
        upstream.arrivals.length === 1 ? true : undefined,
      );
      proc.child.kill(first);
      await proc.waitForOutput('stdout', /shutting down: draining/);
      proc.child.kill(second);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(proc.child.exitCode, null, 'still draining after the second signal');
      assert.equal(proc.child.signalCode, null, 'not killed by the second signal');
      upstream.release();
      assert.equal(await inFlight, 200);
      const { code } = await proc.exited;
      assert.equal(code, 0);
      assert.equal(logMessages(proc.stdout()).at(-1), 'stopped');
    });
  }

  test('a third stop signal during the drain exits at once', async (t) => {
    const upstream = await slowUpstream(t, 10_000);
    const { proc, files, token } = await startProcess(t, upstream.url, 8000);
    const inFlight = fetch(`${files.publicUrl}/v1/orders/held`, {
      headers: { authorization: `Bearer ${token}` },
    }).catch(() => 'cut');
    await waitFor('the request at the upstream', () =>
      upstream.arrivals.length === 1 ? true : undefined,
    );
    proc.child.kill('SIGINT');
    await proc.waitForOutput('stdout', /shutting down: draining/);
    proc.child.kill('SIGINT');
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(proc.child.exitCode, null, 'the second waits');
    const signalledAt = performance.now();
    proc.child.kill('SIGINT');
    assert.deepEqual(await proc.exited, { code: 130, signal: null });
    assert.ok(performance.now() - signalledAt < 2000);
    await inFlight;
  });

  test('admin connections that never complete a request do not hold up the stop', async (t) => {
    const upstream = await slowUpstream(t, 10);
    const graceMs = 500;
    const { proc, files } = await startProcess(t, upstream.url, graceMs);
    const adminPort = Number(new URL(files.adminUrl).port);
    const stalled: Socket[] = [];
    for (const bytes of ['', 'GET /metrics HTTP/1.1\r\nHo']) {
      const socket = connect({ host: '127.0.0.1', port: adminPort });
      socket.on('error', () => undefined);
      await once(socket, 'connect');
      if (bytes !== '') socket.write(bytes);
      stalled.push(socket);
    }
    t.after(() => {
      for (const socket of stalled) socket.destroy();
    });
    const signalledAt = performance.now();
    proc.child.kill('SIGTERM');
    const timeout = new Promise<'hung'>((resolve) =>
      setTimeout(() => resolve('hung'), graceMs + 5000).unref(),
    );
    const result = await Promise.race([proc.exited, timeout]);
    assert.notEqual(result, 'hung', `still running: ${proc.stdout()}`);
    assert.deepEqual(result, { code: 0, signal: null });
    const exitMs = performance.now() - signalledAt;
    assert.ok(exitMs < graceMs + 2500, `exited after ${exitMs} ms`);
    assert.equal(logMessages(proc.stdout()).at(-1), 'stopped');
  });

  test('a request longer than shutdownGraceMs is cut at the grace limit and the process exits 0 promptly', async (t) => {
    const upstream = await slowUpstream(t, 10_000);
    const graceMs = 300;
    const { proc, files, token } = await startProcess(t, upstream.url, graceMs);

    const long = fetch(`${files.publicUrl}/v1/orders/long`, {
      headers: { authorization: `Bearer ${token}` },
    }).then(
      (res) => res.status,
      () => 'cut',
    );
    await waitFor('the request at the upstream', () =>
      upstream.arrivals.length === 1 ? true : undefined,
    );
    const signalledAt = performance.now();
    proc.child.kill('SIGTERM');

    const { code, signal } = await proc.exited;
    const exitMs = performance.now() - signalledAt;
    assert.equal(signal, null);
    assert.equal(code, 0);
    assert.ok(exitMs >= graceMs - 50, `exited after ${exitMs} ms, before the grace period`);
    assert.ok(exitMs < graceMs + 2000, `exited after ${exitMs} ms`);
    assert.equal(await long, 'cut');
    await waitFor('the upstream exchange aborted', () => (upstream.cut === 1 ? true : undefined));

    const messages = logMessages(proc.stdout());
    assert.ok(messages.includes('grace period over: closing remaining connections'));
    assert.equal(messages.at(-1), 'stopped', 'the cut request is logged before "stopped"');
    assert.equal(
      messages.filter((m) => m === 'request').length,
      2,
      'token request and the cut one',
    );
    assert.ok(
      messages.indexOf('stopped') > messages.findIndex((m) => m.startsWith('shutting down')),
    );
  });

  test('the "listening" log line reaches stdout while the process runs, not only at exit', async (t) => {
    const upstream = await slowUpstream(t, 10);
    const { proc } = await startProcess(t, upstream.url, 1000);
    const stdout = await proc.waitForOutput('stdout', /"msg":"listening"/, 1500).catch(() => '');
    assert.match(stdout, /"msg":"listening"/, 'log lines are held back in a buffer');
    proc.child.kill('SIGTERM');
    assert.equal((await proc.exited).code, 0);
  });
});

/** One GET over `agent`; its status and Connection header, or the error code. */
function get(
  agent: Agent,
  url: string,
  token: string,
): Promise<{ status: number; connection: string | undefined } | { error: string }> {
  return new Promise((resolve) => {
    const req = request(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }),
      );
      res.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? 'error' }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? 'error' }));
    req.end();
  });
}

describe('keep-alive connections during the drain', () => {
  test('every response written after SIGTERM carries Connection: close', async (t) => {
    const upstream = await slowUpstream(t, 5000);
    const { proc, files, token } = await startProcess(t, upstream.url, 5000);
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    t.after(() => agent.destroy());
    const inFlight = Array.from({ length: 8 }, (_, i) =>
      get(agent, `${files.publicUrl}/v1/orders/${i}`, token),
    );
    await waitFor('8 requests at the upstream', () =>
      upstream.arrivals.length === 8 ? true : undefined,
    );
    proc.child.kill('SIGTERM');
    await proc.waitForOutput('stdout', /shutting down: draining/);
    upstream.release();
    assert.deepEqual(
      await Promise.all(inFlight),
      Array.from({ length: 8 }, () => ({ status: 200, connection: 'close' })),
    );
    assert.equal((await proc.exited).code, 0);
  });

  test('an idle keep-alive connection still takes a request sent after SIGTERM, answered with close', async (t) => {
    const upstream = await slowUpstream(t, 0);
    upstream.release();
    const { proc, files, token } = await startProcess(t, upstream.url, 5000, 3000);
    // One connection answered with keep-alive before the signal, idle when it comes.
    const socket = connect({ host: '127.0.0.1', port: files.publicPort });
    socket.on('error', () => {});
    t.after(() => socket.destroy());
    const closed = once(socket, 'close');
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    const ask = (path: string) =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    ask('/v1/orders/before');
    await waitFor('the first answer', () => (received.includes('"}') ? true : undefined));
    const first = onlyResponse(received);
    assert.equal(first.status, 200);
    assert.equal(headerOf(first, 'connection'), 'keep-alive');
    received = '';
    proc.child.kill('SIGTERM');
    await proc.waitForOutput('stdout', /shutting down: draining/);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(!socket.destroyed, 'the idle connection is still open 200 ms into the drain');
    ask('/v1/orders/after');
    await closed;
    const second = onlyResponse(received);
    assert.equal(second.status, 200);
    assert.equal(headerOf(second, 'connection'), 'close');
    assert.deepEqual(upstream.arrivals, ['/v1/orders/before', '/v1/orders/after']);
    assert.equal((await proc.exited).code, 0);
  });

  test('a stop with an idle keep-alive client ends when its keep-alive time runs out, closing it cleanly; with none, at once', async (t) => {
    const upstream = await slowUpstream(t, 0);
    upstream.release();
    const keepAliveMs = 1500;
    const { proc, files, token } = await startProcess(t, upstream.url, 20_000, keepAliveMs);
    const socket = connect({ host: '127.0.0.1', port: files.publicPort });
    const errors: string[] = [];
    socket.on('error', (error: NodeJS.ErrnoException) => errors.push(error.code ?? 'error'));
    t.after(() => socket.destroy());
    const ended = once(socket, 'end');
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    socket.write(`GET /v1/orders/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    await waitFor('the answer', () => (received.includes('"}') ? true : undefined));
    const answeredAt = performance.now();
    assert.equal(headerOf(onlyResponse(received), 'connection'), 'keep-alive');
    proc.child.kill('SIGTERM');
    assert.equal((await proc.exited).code, 0);
    const stoppedAfter = performance.now() - answeredAt;
    await ended;
    // Node closes an idle connection when its keep-alive time is up (checked about once a
    // second): the stop waits for that, far less than the 20 s grace.
    assert.ok(
      stoppedAfter >= keepAliveMs - 100,
      `stopped ${Math.round(stoppedAfter)} ms after the answer`,
    );
    assert.ok(
      stoppedAfter < keepAliveMs + 3000,
      `stopped ${Math.round(stoppedAfter)} ms after the answer`,
    );
    assert.deepEqual(errors, [], 'closed with a FIN, not a reset');

    // No connection open: the stop does not wait for any keep-alive time.
    const idle = await startProcess(t, upstream.url, 20_000, 10_000);
    const signalledAt = performance.now();
    idle.proc.child.kill('SIGTERM');
    assert.equal((await idle.proc.exited).code, 0);
    const alone = performance.now() - signalledAt;
    assert.ok(alone < 5000, `stopped ${Math.round(alone)} ms after the signal`);
  });

  test('clients that send their next request as soon as each answer arrives see no reset across drains', async (t) => {
    const resets: string[] = [];
    let answered = 0;
    for (let round = 0; round < 3; round++) {
      const upstream = await slowUpstream(t, 30);
      upstream.release();
      const { proc, files, token } = await startProcess(t, upstream.url, 5000, 5000);
      const agent = new Agent({ keepAlive: true, maxSockets: 16 });
      let stopped = false;
      const perClient = new Array<number>(16).fill(0);
      const client = async (i: number): Promise<void> => {
        for (let n = 0; n < 1000 && !stopped; n++) {
          const result = await get(agent, `${files.publicUrl}/v1/orders/${i}`, token);
          if ('error' in result) {
            // The listener is closed: a new connection is refused. Anything else is a
            // request lost on a connection the gateway closed under it.
            if (result.error !== 'ECONNREFUSED') resets.push(result.error);
            return;
          }
          perClient[i] = (perClient[i] ?? 0) + 1;
          answered++;
        }
      };
      const clients = Array.from({ length: 16 }, (_, i) => client(i));
      // Every client on its keep-alive connection (a connection still in the listener's
      // accept queue when it closes is reset by the kernel: no keep-alive case).
      await waitFor('an answer on each connection', () =>
        perClient.every((count) => count > 0) ? true : undefined,
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      proc.child.kill('SIGTERM');
      assert.equal((await proc.exited).code, 0);
      stopped = true;
      await Promise.all(clients);
      agent.destroy();
    }
    assert.ok(answered > 0);
    assert.deepEqual(resets, []);
  });
});
