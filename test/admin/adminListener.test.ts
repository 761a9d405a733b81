import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { problemOf, startGateway } from '../helpers/fixture.js';

describe('admin listener', () => {
  test('GET /healthz answers 200 JSON, not cached', async (t) => {
    const gw = await startGateway(t);
    const res = await fetch(`${gw.adminUrl}/healthz`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await res.json(), { status: 'ok' });
  });

  test('GET /readyz answers 200 once the gateway is ready', async (t) => {
    const gw = await startGateway(t);
    const res = await fetch(`${gw.adminUrl}/readyz`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await res.json(), { status: 'ready' });
  });

  test('HEAD /healthz answers 200 without a body', async (t) => {
    const gw = await startGateway(t);
    const res = await fetch(`${gw.adminUrl}/healthz`, { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '');
  });

  test('GET /metrics is Prometheus text that counts public requests', async (t) => {
    const gw = await startGateway(t);
    await gw.token();
    const res = await fetch(`${gw.adminUrl}/metrics`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), Registry.PROMETHEUS_CONTENT_TYPE);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const lines = (await res.text()).split('\n');
    assert.ok(lines.includes('# TYPE portaria_http_requests_total counter'));
    assert.ok(
      lines.includes(
        'portaria_http_requests_total{route="token",method="unsafe",status_class="2xx"} 1',
      ),
      lines.filter((l) => l.startsWith('portaria_http_requests_total')).join('\n'),
    );
    assert.ok(lines.includes('portaria_token_requests_total{outcome="issued"} 1'));
  });

  test('an unknown admin path answers 404 problem details', async (t) => {
    const gw = await startGateway(t);
    const res = await fetch(`${gw.adminUrl}/admin/revocations?x=1`);
    assert.equal(res.status, 404);
    assert.deepEqual(await problemOf(res), {
      tipo: 'urn:portaria:problem:not-found',
      titulo: 'Not found',
      status: 404,
      detalhe: 'No admin endpoint at this path.',
      instancia: '/admin/revocations#admin',
    });
  });

  for (const method of ['POST', 'PUT', 'DELETE']) {
    test(`${method} /metrics answers 405 with Allow: GET, HEAD`, async (t) => {
      const gw = await startGateway(t);
      const res = await fetch(`${gw.adminUrl}/metrics`, { method });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'GET, HEAD');
      assert.deepEqual(await problemOf(res), {
        tipo: 'urn:portaria:problem:method-not-allowed',
        titulo: 'Method not allowed',
        status: 405,
        detalhe: 'Admin endpoints accept GET and HEAD only.',
        instancia: '/metrics#admin',
      });
    });
  }

  for (const path of ['/metrics', '/healthz', '/readyz']) {
    test(`${path} on the public port without a token is 401, never the admin answer`, async (t) => {
      const gw = await startGateway(t);
      const res = await fetch(gw.url + path);
      assert.equal(res.status, 401);
      assert.equal(
        res.headers.get('www-authenticate'),
        'Bearer realm="portaria", resource_metadata="https://portaria.test/.well-known/oauth-protected-resource"',
      );
      assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:token-missing');
      assert.equal(gw.upstream.received.length, 0);
    });

    test(`${path} on the public port with a token is forwarded to the upstream`, async (t) => {
      const gw = await startGateway(t);
      const token = await gw.token();
      const res = await fetch(gw.url + path, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-upstream'), 'yes');
      assert.deepEqual(await res.json(), { path, method: 'GET' });
      assert.deepEqual(
        gw.upstream.received.map((r) => [r.method, r.url]),
        [['GET', path]],
      );
    });
  }

  test('/readyz answers 503 while shutdown drains an in-flight request', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    let release = () => {};
    const arrived = new Promise<void>((resolve) => {
      gw.upstream.handler = (_req, res) => {
        release = () => {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end('slow done');
        };
        resolve();
      };
    });
    const inFlight = fetch(`${gw.url}/v1/orders/slow`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await arrived;

    const stopped = gw.app.shutdown();
    const draining = await fetch(`${gw.adminUrl}/readyz`);
    assert.equal(draining.status, 503);
    assert.equal(draining.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await draining.json(), { status: 'not ready', reason: 'shutting down' });
    const alive = await fetch(`${gw.adminUrl}/healthz`);
    assert.equal(alive.status, 200);
    await alive.arrayBuffer();

    release();
    const res = await inFlight;
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'slow done');
    await stopped;
  });
  test('shutdown ends when the in-flight request completes, not at the end of the grace period', async (t) => {
    const graceMs = 6000;
    const gw = await startGateway(t, {
      settings: () => ({ server: { host: '127.0.0.1', port: 0, shutdownGraceMs: graceMs } }),
    });
    const token = await gw.token();
    let release = () => {};
    const arrived = new Promise<void>((resolve) => {
      gw.upstream.handler = (_req, res) => {
        release = () => res.end('done');
        resolve();
      };
    });
    const inFlight = fetch(`${gw.url}/v1/orders/slow`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await arrived;
    const stopped = gw.app.shutdown().then(() => 'stopped' as const);
    release();
    assert.equal(await (await inFlight).text(), 'done');
    let timer: NodeJS.Timeout | undefined;
    const graceHalf = new Promise<'grace'>((resolve) => {
      timer = setTimeout(resolve, graceMs / 2, 'grace');
    });
    const first = await Promise.race([stopped, graceHalf]);
    clearTimeout(timer);
    assert.equal(first, 'stopped', 'the idle keep-alive connection held the drain open');
    await stopped;
  });
});

test('an admin client that stops halfway through its headers is cut after server.headersTimeoutMs', async (t) => {
  const gw = await startGateway(t, {
    settings: () => ({
      server: { host: '127.0.0.1', port: 0, shutdownGraceMs: 2000, headersTimeoutMs: 500 },
    }),
  });
  const { port } = new URL(gw.adminUrl);
  const socket = connect({ host: '127.0.0.1', port: Number(port) });
  t.after(() => socket.destroy());
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  const sentAt = performance.now();
  socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ');
  let received = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => {
    received += chunk;
  });
  await once(socket, 'close', { signal: AbortSignal.timeout(5000) });
  assert.ok(performance.now() - sentAt < 2500, 'cut within headersTimeoutMs + the check interval');
  assert.match(received, /^HTTP\/1\.1 408 /);
});

test('revocation.store: memory is announced as a warning at start', async (t) => {
  const gw = await startGateway(t, { settings: () => ({ revocation: { store: 'memory' } }) });
  const warning = gw.logs
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .find((l) => l.setting === 'revocation.store');
  assert.equal(warning?.level, 'warn');
  const local = await startGateway(t);
  assert.ok(!local.logs.some((line) => line.includes('"setting":"revocation.store"')));
});
