import assert from 'node:assert/strict';
import { once } from 'node:events';
import http, { type IncomingHttpHeaders } from 'node:http';
import { describe, type TestContext, test } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { parseRequestTarget } from '../../src/domain/requestPath.js';
import { TrustedProxies } from '../../src/lib/trustedProxies.js';
import { createHeaderPolicy } from '../../src/proxy/headers.js';
import { compileRouteTable } from '../../src/proxy/routeTable.js';
import { createWebSocketProxy, RELAYED_BODY_LIMIT } from '../../src/proxy/webSocketProxy.js';
import { NOBODY_LISTENS } from '../helpers/process.js';
import { IDENTITY_HEADERS, principal } from './fixtures.js';
import { listen, PROBLEM_BASE, route, startGateway } from './gateway.js';

async function echoUpstream(
  t: TestContext,
  onHeaders?: (h: IncomingHttpHeaders, url: string) => void,
) {
  const server = http.createServer();
  const wss = new WebSocketServer({ server });
  wss.on('connection', (socket, req) => {
    onHeaders?.(req.headers, req.url ?? '');
    socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary }));
  });
  t.after(() => {
    for (const client of wss.clients) client.terminate();
    wss.close();
  });
  return listen(t, server);
}

function connect(
  t: TestContext,
  url: string,
  headers: Record<string, string> = {},
  protocols: string[] = [],
): WebSocket {
  const socket = new WebSocket(url, protocols, { headers });
  socket.on('error', () => {});
  t.after(() => socket.terminate());
  return socket;
}

/** The non-101 answer a WebSocket client got: status, content type and body. */
function refusal(socket: WebSocket): Promise<{ status: number; type: string; body: unknown }> {
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
          body: JSON.parse(body),
        }),
      );
    });
  });
}

describe('webSocketProxy', () => {
  test('messages echo through the tunnel to the route upstream under its base path', async (t) => {
    let upstreamUrl = '';
    const upstreamPort = await echoUpstream(t, (_h, url) => {
      upstreamUrl = url;
    });
    const gateway = await startGateway(t, [
      route('live', '/v1/live', `http://127.0.0.1:${upstreamPort}/ws`),
    ]);

    const socket = connect(t, `ws://127.0.0.1:${gateway.port}/v1/live/feed?topic=a`);
    await once(socket, 'open');
    socket.send('hello');
    const [text] = await once(socket, 'message');
    socket.send(Buffer.from([1, 2, 3]));
    const [binary, isBinary] = await once(socket, 'message');

    assert.equal(String(text), 'hello');
    assert.deepEqual([...(binary as Buffer)], [1, 2, 3]);
    assert.equal(isBinary, true);
    assert.equal(upstreamUrl, '/ws/v1/live/feed?topic=a');
  });

  test('identity headers spoofed by the client are replaced at the upstream', async (t) => {
    let seen: IncomingHttpHeaders | undefined;
    const upstreamPort = await echoUpstream(t, (headers) => {
      seen = headers;
    });
    const gateway = await startGateway(t, [
      route('live', '/v1/live', `http://127.0.0.1:${upstreamPort}`),
    ]);

    const socket = connect(
      t,
      `ws://127.0.0.1:${gateway.port}/v1/live`,
      {
        'X-Client-Id': 'admin',
        X_Client_Id: 'admin',
        'X-Token-Scope': 'admin:all',
        'X-Forwarded-For': '10.0.0.1',
      },
      ['chat'],
    );
    await once(socket, 'open');

    assert.ok(seen !== undefined);
    assert.equal(seen['x-client-id'], 'client-a');
    assert.equal(seen.x_client_id, undefined);
    assert.equal(seen['x-token-scope'], 'orders:read orders:write');
    assert.equal(seen['x-token-jti'], 'jti-1');
    assert.equal(seen['x-forwarded-for'], '127.0.0.1');
    assert.equal(seen['x-request-id'], 'req-1');
    assert.equal(seen.upgrade, 'websocket');
    assert.equal(seen.connection, 'upgrade');
    assert.equal(seen['sec-websocket-protocol'], 'chat');
    assert.equal(typeof seen['sec-websocket-key'], 'string');
    assert.equal(seen['sec-websocket-version'], '13');
    assert.equal(socket.protocol, 'chat');
  });

  test('an upstream that is down gives the client a 502 problem and the gateway keeps serving', async (t) => {
    const upstreamPort = await echoUpstream(t);
    const gateway = await startGateway(t, [
      route('down', '/v1/down', NOBODY_LISTENS),
      route('live', '/v1/live', `http://127.0.0.1:${upstreamPort}`),
    ]);

    const refused = await refusal(connect(t, `ws://127.0.0.1:${gateway.port}/v1/down/x`));

    assert.deepEqual(refused, {
      status: 502,
      type: 'application/problem+json',
      body: {
        tipo: 'urn:portaria:problem:upstream-unavailable',
        titulo: 'Upstream unavailable',
        status: 502,
        detalhe: 'The upstream service could not be reached.',
        instancia: '/v1/down/x#req-1',
      },
    });
    assert.deepEqual(gateway.hookCalls, [
      { hook: 'upstreamError', routeId: 'down', value: 'refused' },
    ]);
    const socket = connect(t, `ws://127.0.0.1:${gateway.port}/v1/live`);
    await once(socket, 'open');
  });

  test('an upstream that does not complete the handshake in time gives a 504 problem', async (t) => {
    const silent = http.createServer();
    silent.on('upgrade', () => {});
    const silentPort = await listen(t, silent);
    const gateway = await startGateway(t, [
      route('mute', '/v1/mute', `http://127.0.0.1:${silentPort}`, 300),
    ]);

    const started = performance.now();
    const refused = await refusal(connect(t, `ws://127.0.0.1:${gateway.port}/v1/mute`));
    const elapsed = performance.now() - started;

    assert.equal(refused.status, 504);
    assert.deepEqual(refused.body, {
      tipo: 'urn:portaria:problem:upstream-timeout',
      titulo: 'Upstream timeout',
      status: 504,
      detalhe: 'The upstream service did not answer in time.',
      instancia: '/v1/mute#req-1',
    });
    assert.ok(elapsed >= 290 && elapsed < 1500, `answered after ${elapsed} ms`);
  });

  test('an upstream refusing the upgrade has its answer relayed to the client', async (t) => {
    const refusing = http.createServer();
    refusing.on('upgrade', (_req, socket) => {
      socket.end(
        'HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nno',
      );
    });
    const refusingPort = await listen(t, refusing);
    const gateway = await startGateway(t, [
      route('closed', '/v1/closed', `http://127.0.0.1:${refusingPort}`),
    ]);

    const socket = connect(t, `ws://127.0.0.1:${gateway.port}/v1/closed`);
    const [, res] = (await once(socket, 'unexpected-response')) as [unknown, http.IncomingMessage];

    assert.equal(res.statusCode, 403);
    assert.equal(res.headers['content-length'], '2');
    assert.equal(res.headers.connection, 'close');
    assert.equal(res.headers['x-request-id'], 'req-1');
    res.resume();
  });

  test('a refusal body larger than RELAYED_BODY_LIMIT is not relayed: 502 problem instead', async (t) => {
    const refusing = http.createServer((_req, res) => {
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.end(Buffer.alloc(RELAYED_BODY_LIMIT + 1, 'x'));
    });
    const refusingPort = await listen(t, refusing);
    const gateway = await startGateway(t, [
      route('big', '/v1/big', `http://127.0.0.1:${refusingPort}`),
    ]);

    const refused = await refusal(connect(t, `ws://127.0.0.1:${gateway.port}/v1/big`));

    assert.equal(refused.status, 502);
    assert.deepEqual(gateway.hookCalls, [
      { hook: 'upstreamError', routeId: 'big', value: 'error' },
    ]);
  });

  test('an upstream switching to another protocol than websocket gives a 502 problem', async (t) => {
    const odd = http.createServer();
    odd.on('upgrade', (_req, socket) => {
      socket.write(
        'HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: h2c\r\n\r\n',
      );
    });
    const oddPort = await listen(t, odd);
    const gateway = await startGateway(t, [route('odd', '/v1/odd', `http://127.0.0.1:${oddPort}`)]);

    const refused = await refusal(connect(t, `ws://127.0.0.1:${gateway.port}/v1/odd`));

    assert.equal(refused.status, 502);
  });

  test('reports each outcome once, and refuses every upgrade with 503 once closed', async (t) => {
    const upstreamPort = await echoUpstream(t);
    let upgrades = 0;
    const proxy = createWebSocketProxy({
      headerPolicy: createHeaderPolicy({
        identityHeaders: IDENTITY_HEADERS,
        forwardAuthorization: true,
        trustedProxies: new TrustedProxies([]),
        forwardCallerHeaders: [],
      }),
      problemTypeBase: PROBLEM_BASE,
    });
    t.after(() => proxy.close());
    const table = compileRouteTable({
      routes: [route('live', '/v1/live', `http://127.0.0.1:${upstreamPort}`)],
      upstream: { default: null, timeoutMs: 5000, connections: 8 },
    });
    const outcomes: [string, number, string | undefined][] = [];
    const server = http.createServer();
    server.on('upgrade', (req: http.IncomingMessage, socket, head: Buffer) => {
      upgrades++;
      const target = parseRequestTarget(req.url ?? '');
      const id = `req-${upgrades}`;
      const ctx = {
        requestId: id,
        peerAddress: '127.0.0.1',
        proto: 'http' as const,
        upstreamCut: undefined,
        upstreamMs: undefined,
      };
      const matched = table.match(target.path);
      assert.ok(matched);
      proxy.upgrade(req, socket, head, matched, target, principal(), ctx, (status, reason) =>
        outcomes.push([id, status, reason]),
      );
    });
    const port = await listen(t, server);

    const socket = connect(t, `ws://127.0.0.1:${port}/v1/live`);
    await once(socket, 'open');
    proxy.close();
    await once(socket, 'close');
    const refused = await refusal(connect(t, `ws://127.0.0.1:${port}/v1/live`));

    assert.equal(refused.status, 503);
    assert.deepEqual(refused.body, {
      tipo: 'urn:portaria:problem:service-unavailable',
      titulo: 'Service unavailable',
      status: 503,
      detalhe: 'The gateway is shutting down.',
      instancia: '/v1/live#req-2',
    });
    assert.deepEqual(outcomes, [
      ['req-1', 101, undefined],
      ['req-2', 503, 'shutting-down'],
    ]);
  });

  test('a tunnel closed by the upstream closes the client side without crashing the gateway', async (t) => {
    const upstream = http.createServer();
    const wss = new WebSocketServer({ server: upstream });
    wss.on('connection', (socket) => socket.terminate());
    t.after(() => wss.close());
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('live', '/v1/live', `http://127.0.0.1:${upstreamPort}`),
    ]);

    const socket = connect(t, `ws://127.0.0.1:${gateway.port}/v1/live`);
    const [code] = await once(socket, 'close');

    assert.equal(code, 1006);
    assert.deepEqual(gateway.hookCalls, []);
  });

  test('a non-WebSocket upgrade is refused with a 400 problem', async (t) => {
    const upstreamPort = await echoUpstream(t);
    const gateway = await startGateway(t, [
      route('live', '/v1/live', `http://127.0.0.1:${upstreamPort}`),
    ]);

    const reply = await new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const req = http.request(`${gateway.url}/v1/live`, {
        agent: false,
        headers: { connection: 'upgrade', upgrade: 'h2c' },
      });
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) }));
      });
      req.on('error', reject);
      req.end();
    });

    assert.deepEqual(reply, {
      status: 400,
      body: {
        tipo: 'urn:portaria:problem:invalid-request',
        titulo: 'Invalid request',
        status: 400,
        detalhe: 'Only WebSocket upgrades of GET requests are supported.',
        instancia: '/v1/live#req-1',
      },
    });
  });
});
