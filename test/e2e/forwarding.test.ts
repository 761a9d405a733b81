/**
 * Forwarding end to end through a real gateway: unreachable and slow upstreams (502/504
 * without leaks, counted in the metrics), many concurrent callers each forwarded with their
 * own identity, large bodies streamed intact both ways, and WebSocket upgrades
 * authenticated like any request.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, request } from 'node:http';
import { connect as connectTcp, type Socket } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeJwt } from 'jose';
import WebSocket, { WebSocketServer } from 'ws';
import { ManualClock } from '../../src/lib/clock.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type ClientSpec,
  type Gateway,
  problemOf,
  startGateway,
} from '../helpers/fixture.js';
import { NOBODY_LISTENS } from '../helpers/process.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { accessLineOf, parsedLogs, waitFor } from '../helpers/wait.js';

const ROUTE_TIMEOUT_MS = 300;

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

function call(gw: Gateway, token: string, path = '/v1/orders/1', init: RequestInit = {}) {
  return fetch(gw.url + path, {
    ...init,
    headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
  });
}

async function metricsText(gw: Gateway): Promise<string> {
  const res = await fetch(`${gw.adminUrl}/metrics`);
  assert.equal(res.status, 200);
  return res.text();
}

function upstreamErrors(text: string, route: string, kind: string): number {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`portaria_upstream_errors_total{route="${route}",kind="${kind}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

/** The upstream answers after `delayMs` (the timer is dropped when the gateway gives up). */
function answerLate(gw: Gateway, delayMs: number) {
  gw.upstream.handler = (_req, res) => {
    const timer = setTimeout(() => res.end('late'), delayMs);
    res.on('close', () => clearTimeout(timer));
  };
}

describe('upstream failures', () => {
  test('an upstream failing after its headers: truncated for the client, logged as the upstream failure (not 499)', async (t) => {
    const gw = await startGateway(t);
    gw.upstream.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '10' });
      res.write('ab', () => res.socket?.destroy());
    };
    const res = await call(gw, await gw.token());
    assert.equal(res.status, 200);
    await assert.rejects(res.text(), 'the client sees a truncated body');
    const requestId = res.headers.get('x-request-id') as string;
    const line = await waitFor('the request line', () =>
      parsedLogs(gw.logs).find(
        (l) =>
          l['portaria.request_id'] === requestId && l['http.response.status_code'] !== undefined,
      ),
    );
    assert.equal(line.msg, 'request failed');
    assert.equal(line.level, 'warn');
    assert.equal(line['http.response.status_code'], 200, 'the status the client got');
    assert.equal(line['portaria.reason'], 'upstream-reset');
    assert.equal(upstreamErrors(await metricsText(gw), 'default', 'reset'), 1);
  });

  test('an upstream nobody listens on → 502 that leaks no address, port or error code', async (t) => {
    const port = new URL(NOBODY_LISTENS).port;
    const gw = await startGateway(t, {
      settings: () => ({ upstream: { default: { upstream: NOBODY_LISTENS } } }),
    });
    const res = await call(gw, await gw.token());
    assert.equal(res.status, 502);
    const text = await res.text();
    const problem = JSON.parse(text) as Record<string, unknown>;
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.equal(problem.tipo, 'urn:portaria:problem:upstream-unavailable');
    assert.equal(problem.status, 502);
    assert.equal(problem.instancia, `/v1/orders/1#${res.headers.get('x-request-id')}`);
    assert.doesNotMatch(text, /127\.0\.0\.1|ECONNREFUSED|connect/i);
    const requestId = res.headers.get('x-request-id') ?? '';
    assert.ok(!text.replace(requestId, '').includes(port), 'the port number leaked');
    assert.equal(upstreamErrors(await metricsText(gw), 'default', 'refused'), 1);
  });

  test('a 502 and an upstream’s own 500 are logged at warn with their reason, not at error', async (t) => {
    const gw = await startGateway(t, {
      settings: (upstreamUrl) => ({
        routes: [{ id: 'down', prefix: '/v1/down', upstream: NOBODY_LISTENS }],
        upstream: { default: { upstream: upstreamUrl } },
      }),
    });
    gw.upstream.handler = (_req, res) => {
      res.statusCode = 500;
      res.end('broken');
    };
    const token = await gw.token();
    const down = await call(gw, token, '/v1/down/1');
    assert.equal(down.status, 502);
    const own = await call(gw, token, '/v1/orders/1');
    assert.equal(own.status, 500);
    const downLine = await accessLineOf(gw.logs, down.headers.get('x-request-id') ?? '');
    assert.equal(downLine.level, 'warn');
    assert.equal(downLine.msg, 'request failed');
    assert.equal(downLine['http.response.status_code'], 502);
    assert.equal(downLine['portaria.reason'], 'upstream-refused');
    assert.equal(downLine['exception.type'], undefined);
    const ownLine = await accessLineOf(gw.logs, own.headers.get('x-request-id') ?? '');
    assert.equal(ownLine.level, 'warn');
    assert.equal(ownLine['http.response.status_code'], 500);
    assert.equal(
      parsedLogs(gw.logs).filter((line) => line.level === 'error').length,
      0,
      'nothing at error',
    );
  });

  test('an upstream slower than the route timeout → 504 within timeout + 1 s', async (t) => {
    const gw = await startGateway(t, {
      settings: (u) => ({ upstream: { default: { upstream: u, timeoutMs: ROUTE_TIMEOUT_MS } } }),
    });
    answerLate(gw, 3000);
    const token = await gw.token();
    const started = performance.now();
    const res = await call(gw, token);
    const elapsed = performance.now() - started;
    assert.equal(res.status, 504);
    const problem = await problemOf(res);
    assert.equal(problem.tipo, 'urn:portaria:problem:upstream-timeout');
    assert.equal(problem.status, 504);
    assert.doesNotMatch(JSON.stringify(problem), /127\.0\.0\.1|UND_ERR|ETIMEDOUT/);
    assert.ok(elapsed >= ROUTE_TIMEOUT_MS - 20, `answered after ${elapsed} ms`);
    assert.ok(elapsed < ROUTE_TIMEOUT_MS + 1000, `answered after ${elapsed} ms`);
    assert.equal(upstreamErrors(await metricsText(gw), 'default', 'timeout'), 1);
  });

  test('portaria_upstream_errors_total counts the 502 and the 504 per route and kind', async (t) => {
    const gw = await startGateway(t, {
      settings: (u) => ({
        routes: [
          { id: 'down', prefix: '/v1/down', upstream: NOBODY_LISTENS },
          { id: 'slow', prefix: '/v1/slow', upstream: u, timeoutMs: ROUTE_TIMEOUT_MS },
        ],
        upstream: { default: null },
      }),
    });
    answerLate(gw, 3000);
    const token = await gw.token();
    const statuses = [];
    for (const path of ['/v1/down/1', '/v1/down/2', '/v1/slow/1']) {
      const res = await call(gw, token, path);
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [502, 502, 504]);
    const text = await metricsText(gw);
    assert.equal(upstreamErrors(text, 'down', 'refused'), 2);
    assert.equal(upstreamErrors(text, 'slow', 'timeout'), 1);
    assert.equal(upstreamErrors(text, 'slow', 'refused'), 0);
  });
});

describe('the access line of a forwarded request', () => {
  test('carries the bytes each request moved on a keep-alive connection, the upstream time and the path without its query', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    gw.upstream.handler = (_req, res) => {
      setTimeout(() => res.end('x'.repeat(1000)), 20);
    };
    const socket = connectTcp(Number(new URL(gw.url).port), '127.0.0.1');
    t.after(() => socket.destroy());
    await once(socket, 'connect');
    const body = 'a'.repeat(500);
    const first =
      `POST /v1/orders/first?secret=q HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
      `X-Request-Id: size-1\r\nUser-Agent: sizes/1\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const second = `GET /v1/orders/second HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nX-Request-Id: size-2\r\nConnection: close\r\n\r\n`;
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    socket.write(first);
    const firstAnswer = await waitFor('the first answer', () =>
      received.endsWith('x'.repeat(1000)) ? received : undefined,
    );
    socket.write(second);
    await once(socket, 'end');
    const secondAnswer = received.slice(firstAnswer.length);

    const one = await accessLineOf(gw.logs, 'size-1');
    const two = await accessLineOf(gw.logs, 'size-2');
    assert.deepEqual(
      [one['http.request.size'], one['http.response.size']],
      [Buffer.byteLength(first), Buffer.byteLength(firstAnswer, 'latin1')],
    );
    assert.deepEqual(
      [two['http.request.size'], two['http.response.size']],
      [Buffer.byteLength(second), Buffer.byteLength(secondAnswer, 'latin1')],
    );
    assert.equal(one['url.path'], '/v1/orders/first');
    assert.equal(one['user_agent.original'], 'sizes/1');
    assert.equal(two['user_agent.original'], undefined);
    const upstreamMs = one['portaria.upstream.duration_ms'] as number;
    assert.ok(upstreamMs >= 15, `the upstream's 20 ms (${upstreamMs})`);
    assert.ok(upstreamMs <= (one['portaria.duration_ms'] as number));
  });
});

describe('the access line behind a trusted proxy', () => {
  test('client.address is the address the trusted proxy names; network.peer.address the proxy', async (t) => {
    const gw = await startGateway(t, {
      settings: () => ({ server: { trustedProxies: ['127.0.0.1'] } }),
    });
    const token = await gw.token();
    const res = await call(gw, token, '/v1/orders/1', {
      headers: { 'x-forwarded-for': '198.51.100.9, 203.0.113.7', 'x-request-id': 'proxied-1' },
    });
    await res.arrayBuffer();
    const line = await accessLineOf(gw.logs, 'proxied-1');
    assert.deepEqual(
      [line['client.address'], line['network.peer.address']],
      ['203.0.113.7', '127.0.0.1'],
    );
  });
});

describe('concurrency and large bodies', () => {
  test('200 concurrent requests with 200 distinct tokens each reach the upstream with their own identity', async (t) => {
    const clients: ClientSpec[] = Array.from({ length: 20 }, (_, i) => ({
      id: `client-${i}`,
      secret: `secret-${i}-0123456789abcdefghijklmnopqrstuvwxyz`,
      scopes: ['orders:read'],
    }));
    const gw = await startGateway(t, { clients });
    const tokens: { token: string; clientId: string; jti: string }[] = [];
    for (let round = 0; round < 10; round++) {
      const issued = await Promise.all(clients.map((c) => gw.token(c.id, c.secret)));
      issued.forEach((token, i) => {
        const clientId = (clients[i] as ClientSpec).id;
        tokens.push({ token, clientId, jti: decodeJwt(token).jti as string });
      });
    }
    assert.equal(new Set(tokens.map((x) => x.jti)).size, 200);

    const responses = await Promise.all(
      tokens.map(async ({ token }, i) => {
        const res = await call(gw, token, `/v1/orders/${i}`);
        return { status: res.status, body: (await res.json()) as { path: string } };
      }),
    );
    responses.forEach(({ status, body }, i) => {
      assert.equal(status, 200);
      assert.equal(body.path, `/v1/orders/${i}`);
    });
    assert.equal(gw.upstream.received.length, 200);
    for (const seen of gw.upstream.received) {
      const i = Number(seen.url.split('/').pop());
      const expected = tokens[i];
      assert.ok(expected);
      assert.equal(seen.headers['x-client-id'], expected.clientId);
      assert.equal(seen.headers['x-token-jti'], expected.jti);
      assert.equal(seen.headers.authorization, `Bearer ${expected.token}`);
    }
  });

  test('a 2 MB request body streams to the upstream intact', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    const body = randomBytes(2 * 1024 * 1024);
    const res = await call(gw, token, '/v1/orders/upload', {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const seen = gw.upstream.received[0];
    assert.ok(seen);
    assert.equal(seen.body.length, body.length);
    assert.equal(sha256(seen.body), sha256(body));
  });

  test('a 2 MB response body streams back to the client intact', async (t) => {
    const gw = await startGateway(t);
    const payload = randomBytes(2 * 1024 * 1024);
    gw.upstream.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      // In 64 KiB writes, so the gateway relays a stream rather than one buffer.
      for (let offset = 0; offset < payload.length; offset += 65_536) {
        res.write(payload.subarray(offset, offset + 65_536));
      }
      res.end();
    };
    const res = await call(gw, await gw.token(), '/v1/orders/download');
    assert.equal(res.status, 200);
    const received = new Uint8Array(await res.arrayBuffer());
    assert.equal(received.length, payload.length);
    assert.equal(sha256(received), sha256(payload));
  });
});

interface WsUpstream {
  url: string;
  /** Headers and URL of every upgrade the upstream accepted. */
  upgrades: { headers: IncomingHttpHeaders; url: string }[];
  /** Upstream WebSocket connections still open. */
  open: number;
}

async function wsUpstream(t: TestContext): Promise<WsUpstream> {
  const server = createServer();
  const wss = new WebSocketServer({ server });
  const upstream: WsUpstream = { url: '', upgrades: [], open: 0 };
  wss.on('connection', (socket, req) => {
    upstream.upgrades.push({ headers: req.headers, url: req.url ?? '' });
    upstream.open += 1;
    socket.on('close', () => {
      upstream.open -= 1;
    });
    socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary }));
  });
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(async () => {
    for (const client of wss.clients) client.terminate();
    wss.close();
    for (const socket of sockets) socket.destroy();
    await new Promise((done) => server.close(done));
  });
  upstream.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return upstream;
}

async function wsGateway(
  t: TestContext,
  upstreamUrl?: string,
  extra: { clock?: ManualClock; server?: Record<string, unknown> } = {},
) {
  const upstream = await wsUpstream(t);
  const target = upstreamUrl ?? upstream.url;
  const gw = await startGateway(t, {
    ...(extra.clock ? { clock: extra.clock } : {}),
    settings: () => ({
      ...(extra.server
        ? { server: { host: '127.0.0.1', port: 0, shutdownGraceMs: 2000, ...extra.server } }
        : {}),
      routes: [
        {
          id: 'live',
          prefix: '/v1/live',
          upstream: target,
          scopes: ['orders:read'],
          timeoutMs: ROUTE_TIMEOUT_MS,
        },
        { id: 'admin-live', prefix: '/v1/admin-live', upstream: target, scopes: ['admin'] },
      ],
      upstream: { default: null },
    }),
  });
  return { gw, upstream, wsBase: gw.url.replace('http:', 'ws:') };
}

function connect(t: TestContext, url: string, headers: Record<string, string> = {}): WebSocket {
  const socket = new WebSocket(url, { headers });
  socket.on('error', () => {});
  t.after(() => socket.terminate());
  return socket;
}

/** The non-101 answer a WebSocket client got. */
function refusal(socket: WebSocket): Promise<{
  status: number;
  type: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}> {
  return new Promise((resolve, reject) => {
    socket.on('open', () => reject(new Error('unexpectedly upgraded')));
    socket.on('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: res.headers['content-type'] ?? '',
          headers: res.headers,
          body: JSON.parse(body) as Record<string, unknown>,
        }),
      );
    });
  });
}

describe('WebSocket upgrades through the gateway', () => {
  test('without a token the upgrade is refused with 401 token-missing and the upstream sees nothing', async (t) => {
    const { gw, upstream, wsBase } = await wsGateway(t);
    const answer = await refusal(connect(t, `${wsBase}/v1/live/feed`));
    assert.equal(answer.status, 401);
    assert.equal(answer.type, 'application/problem+json');
    assert.equal(answer.body.tipo, 'urn:portaria:problem:token-missing');
    assert.match(answer.body.instancia as string, /^\/v1\/live\/feed#/);
    assert.equal(upstream.upgrades.length, 0);
    assert.equal(gw.upstream.received.length, 0);
  });

  test('a WebSocket upgrade (a GET) on the token path → 405 naming the method it accepts (Allow: POST)', async (t) => {
    const { gw, upstream, wsBase } = await wsGateway(t);
    const answer = await refusal(
      connect(t, `${wsBase}/v1/authentication/accesstoken`, {
        authorization: `Bearer ${await gw.token()}`,
      }),
    );
    assert.equal(answer.status, 405);
    assert.equal(answer.body.tipo, 'urn:portaria:problem:method-not-allowed');
    assert.equal(answer.headers.allow, 'POST');
    assert.equal(answer.headers['cache-control'], 'no-store');
    assert.equal(upstream.upgrades.length, 0);
  });

  for (const path of ['/.well-known/jwks.json', '/v1/openapi.json']) {
    test(`a WebSocket upgrade on ${path}, whose GET is fine → 400, not a 405 allowing GET`, async (t) => {
      const { gw, upstream, wsBase } = await wsGateway(t);
      const answer = await refusal(
        connect(t, `${wsBase}${path}`, { authorization: `Bearer ${await gw.token()}` }),
      );
      assert.equal(answer.status, 400);
      assert.equal(answer.body.tipo, 'urn:portaria:problem:invalid-request');
      assert.equal(answer.headers.allow, undefined);
      assert.equal(answer.headers['cache-control'], 'no-store');
      assert.equal(upstream.upgrades.length, 0);
    });
  }

  test('with a valid token messages echo and the upstream sees the identity from the token', async (t) => {
    const { gw, upstream, wsBase } = await wsGateway(t);
    const token = await gw.token();
    const socket = connect(t, `${wsBase}/v1/live/feed?topic=a`, {
      authorization: `Bearer ${token}`,
      'x-client-id': 'evil',
      'x-token-scope': 'admin',
    });
    await once(socket, 'open');
    socket.send('hello');
    const [message] = await once(socket, 'message');
    assert.equal(String(message), 'hello');
    assert.equal(upstream.upgrades.length, 1);
    const seen = upstream.upgrades[0];
    assert.ok(seen);
    assert.equal(seen.url, '/v1/live/feed?topic=a');
    assert.equal(seen.headers['x-client-id'], 'acme');
    assert.equal(seen.headers['x-token-scope'], 'orders:read orders:write');
    assert.equal(seen.headers['x-token-jti'], decodeJwt(token).jti);
    assert.equal(seen.headers['x-forwarded-for'], '127.0.0.1');
  });

  test('a token lacking the route scope → 403 insufficient-scope', async (t) => {
    const { gw, upstream, wsBase } = await wsGateway(t);
    const socket = connect(t, `${wsBase}/v1/admin-live`, {
      authorization: `Bearer ${await gw.token()}`,
    });
    const answer = await refusal(socket);
    assert.equal(answer.status, 403);
    assert.equal(answer.body.tipo, 'urn:portaria:problem:insufficient-scope');
    assert.equal(upstream.upgrades.length, 0);
  });

  test('a revoked token → 401 token-revoked on upgrade', async (t) => {
    const { gw, upstream, wsBase } = await wsGateway(t);
    const token = await gw.token();
    await gw.app.revoke(decodeJwt(token).jti as string);
    const answer = await refusal(
      connect(t, `${wsBase}/v1/live`, { authorization: `Bearer ${token}` }),
    );
    assert.equal(answer.status, 401);
    assert.equal(answer.body.tipo, 'urn:portaria:problem:token-revoked');
    assert.equal(upstream.upgrades.length, 0);
  });

  test('revoking the token closes its open tunnel, both sides, within about a second', async (t) => {
    const { gw, upstream, wsBase } = await wsGateway(t);
    const token = await gw.token();
    const socket = connect(t, `${wsBase}/v1/live/feed`, { authorization: `Bearer ${token}` });
    await once(socket, 'open');
    socket.send('before');
    await once(socket, 'message');
    const other = connect(t, `${wsBase}/v1/live/other`, {
      authorization: `Bearer ${await gw.token()}`,
    });
    await once(other, 'open');

    const revokedAt = performance.now();
    await gw.app.revoke(decodeJwt(token).jti as string);
    const [code] = await once(socket, 'close', { signal: AbortSignal.timeout(5000) });
    assert.equal(code, 1006, 'the TCP connection ended (no forged close frame)');
    assert.ok(performance.now() - revokedAt < 2500);
    await waitFor('the upstream side closed', () => (upstream.open === 1 ? true : undefined));

    other.send('still here');
    const [echo] = await once(other, 'message');
    assert.equal(String(echo), 'still here', 'a tunnel of another token is untouched');
    const line = await waitFor('the close line', () =>
      parsedLogs(gw.logs).find((l) => l.msg === 'websocket closed'),
    );
    assert.equal(line['portaria.reason'], 'token_revoked');
    assert.equal(line['http.route'], 'live');
    assert.equal(line['portaria.client_id'], 'acme');
    const text = await metricsText(gw);
    assert.match(text, /portaria_websocket_closed_total\{reason="token_revoked"\} 1/);
    assert.match(text, /portaria_websocket_closed_total\{reason="token_expired"\} 0/);
  });

  test('during the shutdown drain, revoking a token still closes its tunnel within about a second', async (t) => {
    const { gw, wsBase } = await wsGateway(t, undefined, { server: { shutdownGraceMs: 8000 } });
    const token = await gw.token();
    const socket = connect(t, `${wsBase}/v1/live/feed`, { authorization: `Bearer ${token}` });
    await once(socket, 'open');
    const stopping = gw.app.shutdown();
    await waitFor('the drain', () =>
      parsedLogs(gw.logs).some((l) => String(l.msg).startsWith('shutting down')) ? true : undefined,
    );
    const revokedAt = performance.now();
    await gw.app.revoke(decodeJwt(token).jti as string);
    await once(socket, 'close', { signal: AbortSignal.timeout(5000) });
    assert.ok(performance.now() - revokedAt < 2500, 'closed long before the 8 s grace ended');
    await stopping;
  });

  test('a tunnel is closed once its token is past exp + skew, unless closeWebSocketsAtTokenExpiry is off', async (t) => {
    const clock = new ManualClock();
    const { gw, upstream, wsBase } = await wsGateway(t, undefined, { clock });
    const socket = connect(t, `${wsBase}/v1/live`, { authorization: `Bearer ${await gw.token()}` });
    await once(socket, 'open');
    clock.advance((3600 + 60 - 1) * 1000); // exp + skew not yet reached
    await sleep(1500);
    socket.send('alive');
    assert.equal(String((await once(socket, 'message'))[0]), 'alive');
    clock.advance(1000);
    await once(socket, 'close', { signal: AbortSignal.timeout(5000) });
    await waitFor('the upstream side closed', () => (upstream.open === 0 ? true : undefined));
    assert.match(
      await metricsText(gw),
      /portaria_websocket_closed_total\{reason="token_expired"\} 1/,
    );

    const keptClock = new ManualClock();
    const kept = await wsGateway(t, undefined, {
      clock: keptClock,
      server: { closeWebSocketsAtTokenExpiry: false },
    });
    const keptToken = await kept.gw.token();
    const lasting = connect(t, `${kept.wsBase}/v1/live`, { authorization: `Bearer ${keptToken}` });
    await once(lasting, 'open');
    keptClock.advance(2 * 3600 * 1000);
    await sleep(1500);
    lasting.send('outlives its token');
    assert.equal(String((await once(lasting, 'message'))[0]), 'outlives its token');
    await kept.gw.app.revoke(decodeJwt(keptToken).jti as string);
    // Revocation closes it all the same.
    await once(lasting, 'close', { signal: AbortSignal.timeout(5000) });
  });

  test('an upgrade to an upstream nobody listens on → 502, counted in portaria_upstream_errors_total', async (t) => {
    const { gw, wsBase } = await wsGateway(t, NOBODY_LISTENS);
    const answer = await refusal(
      connect(t, `${wsBase}/v1/live`, { authorization: `Bearer ${await gw.token()}` }),
    );
    assert.equal(answer.status, 502);
    assert.equal(answer.body.tipo, 'urn:portaria:problem:upstream-unavailable');
    assert.doesNotMatch(JSON.stringify(answer.body), /127\.0\.0\.1|ECONNREFUSED/);
    assert.equal(upstreamErrors(await metricsText(gw), 'live', 'refused'), 1);
  });
});

/** One request with node:http (fetch refuses the upgrade fields); status, headers, body. */
function offerH2c(
  gw: Gateway,
  method: string,
  path: string,
  headers: Record<string, string>,
  body = '',
): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: hostname,
        port: Number(port),
        method,
        path,
        agent: false,
        headers: {
          connection: 'Upgrade, HTTP2-Settings',
          upgrade: 'h2c',
          'http2-settings': 'AAMAAABkAARAAAAAAAIAAAAA',
          ...(body === '' ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('upgrade', () => reject(new Error('the gateway took up the h2c upgrade')));
    req.on('error', reject);
    req.end(body);
  });
}

describe('HTTP/2 upgrade offers (h2c) from HTTP/1.1 clients', () => {
  test('are ignored: a token request gets its token, a protected request is forwarded', async (t) => {
    const gw = await startGateway(t);
    const issued = await offerH2c(
      gw,
      'POST',
      '/v1/authentication/accesstoken',
      { 'content-type': 'application/json' },
      JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
    );
    assert.equal(issued.status, 200, issued.body);
    const token = (JSON.parse(issued.body) as { token_de_acesso: string }).token_de_acesso;

    const forwarded = await offerH2c(gw, 'GET', '/v1/orders/7', {
      authorization: `Bearer ${token}`,
    });
    assert.equal(forwarded.status, 200, forwarded.body);
    const seen = gw.upstream.received.at(-1);
    assert.equal(seen?.url, '/v1/orders/7');
    assert.equal(seen?.headers.upgrade, undefined);
    assert.equal(seen?.headers['http2-settings'], undefined);
    assert.equal(seen?.headers['x-client-id'], CLIENT_ID);

    const refused = await offerH2c(gw, 'GET', '/v1/orders/7', {});
    assert.equal(refused.status, 401, 'and still authenticated like any request');
  });
});

describe('a WebSocket upgrade offered in an HTTP/1.0 request', () => {
  test('is ignored (RFC 9110 §7.8): the GET is answered as a plain request, no tunnel opens', async (t) => {
    const gw = await startGateway(t);
    let upstreamUpgrades = 0;
    gw.upstream.server.on('upgrade', (_req, socket: Socket) => {
      upstreamUpgrades++;
      socket.destroy();
    });
    const token = await gw.token();
    const raw = await rawRequest(
      gw.url,
      `GET /v1/orders/ws HTTP/1.0\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    assert.match(raw, /^HTTP\/1\.1 200 /);
    assert.equal(upstreamUpgrades, 0);
    const seen = gw.upstream.received.at(-1);
    assert.equal(seen?.url, '/v1/orders/ws');
    assert.equal(seen?.headers.upgrade, undefined);
    assert.equal(seen?.headers['x-client-id'], CLIENT_ID);
  });
});
