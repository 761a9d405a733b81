/**
 * WebSocket upgrades at their edges, through a real gateway and real upstreams on
 * loopback: a client that leaves (or whose token is revoked) before the 101 leaves no
 * upstream connection behind; every upgrade gets one access line and counts in the
 * request metrics once its outcome is known; a refusal the upstream sends instead of a
 * 101 reaches the client well framed, and the 101 carries no stray hop-by-hop field; the
 * drain, the grace limit and a stale revocation list apply to upgrades too; an HTTP
 * request cut at the grace limit is logged as such, not as the client's doing.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeJwt } from 'jose';
import { WebSocketServer } from 'ws';
import { type Gateway, startGateway } from '../helpers/fixture.js';
import { sample, scrape } from '../helpers/metrics.js';
import { NOBODY_LISTENS } from '../helpers/process.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { headerOf, onlyResponse, rawProblemOf } from '../helpers/rawResponse.js';
import { startRedis } from '../helpers/redisServer.js';
import { type LogLine, parsedLogs, waitFor } from '../helpers/wait.js';

const KEY = 'dGhlIHNhbXBsZSBub25jZQ==';

/** A WebSocket handshake as raw bytes; `token` and `reqId` add their fields. */
function handshake(path: string, token?: string, reqId?: string): string {
  return (
    `GET ${path} HTTP/1.1\r\nHost: gateway.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
    `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${KEY}\r\n` +
    (token === undefined ? '' : `Authorization: Bearer ${token}\r\n`) +
    (reqId === undefined ? '' : `X-Request-Id: ${reqId}\r\n`) +
    '\r\n'
  );
}

interface WsUpstream {
  url: string;
  /** Upgrade requests received. */
  upgrades: number;
  /** TCP connections open now. */
  connections: number;
  /** WebSocket sessions opened, and those still open. */
  sessions: number;
  openSessions: number;
}

/**
 * A WebSocket echo upstream that completes each handshake after `delayMs` (never when
 * negative), and counts its TCP connections and sessions. `extraHeaders` go on its 101.
 * While it waits it reads the socket, so it notices (and closes on) a gateway that gave up.
 */
async function wsUpstream(
  t: TestContext,
  delayMs = 0,
  extraHeaders: string[] = [],
): Promise<WsUpstream> {
  const server = createServer((_req, res) => res.end('plain'));
  const wss = new WebSocketServer({ noServer: true });
  wss.on('headers', (headers) => headers.push(...extraHeaders));
  const upstream: WsUpstream = {
    url: '',
    upgrades: 0,
    connections: 0,
    sessions: 0,
    openSessions: 0,
  };
  const timers = new Set<NodeJS.Timeout>();
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    upstream.upgrades++;
    socket.on('error', () => {});
    const gaveUp = () => socket.destroy();
    socket.once('end', gaveUp);
    socket.resume();
    if (delayMs < 0) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      socket.removeListener('end', gaveUp);
      socket.pause();
      if (socket.destroyed) return;
      wss.handleUpgrade(req, socket, head, (ws) => {
        upstream.sessions++;
        upstream.openSessions++;
        ws.on('close', () => {
          upstream.openSessions--;
        });
        ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
      });
    }, delayMs);
    timers.add(timer);
  });
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    upstream.connections++;
    sockets.add(socket);
    socket.once('close', () => {
      upstream.connections--;
      sockets.delete(socket);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(async () => {
    for (const timer of timers) clearTimeout(timer);
    for (const ws of wss.clients) ws.terminate();
    for (const socket of sockets) socket.destroy();
    await new Promise((done) => server.close(done));
  });
  upstream.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return upstream;
}

/** A gateway whose routes `/v1/<id>` lead to the given upstreams (timeout per route). */
function gatewayFor(
  t: TestContext,
  routes: { id: string; upstream: string; timeoutMs?: number }[],
  server: Record<string, unknown> = {},
): Promise<Gateway> {
  return startGateway(t, {
    settings: () => ({
      server: { host: '127.0.0.1', port: 0, shutdownGraceMs: 2000, ...server },
      routes: routes.map((r) => ({
        id: r.id,
        prefix: `/v1/${r.id}`,
        upstream: r.upstream,
        scopes: ['orders:read'],
        timeoutMs: r.timeoutMs ?? 10_000,
      })),
      upstream: { default: null },
    }),
  });
}

/** A raw client connection that can reset (RST) instead of closing. */
function rawClient(t: TestContext, gw: Gateway): Socket {
  const { port } = new URL(gw.url);
  const socket = connect({ host: '127.0.0.1', port: Number(port) });
  socket.on('error', () => {});
  t.after(() => socket.destroy());
  return socket;
}

/** Everything a raw connection received until the gateway closed it (bounded). */
function readToClose(socket: Socket, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    const timer = setTimeout(() => reject(new Error(`still open; got ${text}`)), timeoutMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
}

/** The access line of an upgrade (`upgrade` / `upgrade failed`), once written. */
function upgradeLineOf(logs: readonly string[], reqId: string, timeoutMs = 3000): Promise<LogLine> {
  return waitFor(
    `the upgrade line of ${reqId}`,
    () =>
      parsedLogs(logs).find(
        (l) =>
          l['portaria.request_id'] === reqId && (l.msg === 'upgrade' || l.msg === 'upgrade failed'),
      ),
    timeoutMs,
  );
}

function requestsTotal(text: string, route: string, method: string, status: string): number {
  return (
    sample(
      text,
      `portaria_http_requests_total{route="${route}",method="${method}",status_class="${status}"}`,
    ) ?? 0
  );
}

describe('a client gone before the 101 leaves no upstream connection', () => {
  test('a client reset during a slow handshake aborts the upstream request at once', async (t) => {
    const upstream = await wsUpstream(t, -1);
    const gw = await gatewayFor(t, [{ id: 'live', upstream: upstream.url }]);
    const client = rawClient(t, gw);
    client.write(handshake('/v1/live', await gw.token(), 'reset-1'));
    await waitFor('the upgrade at the upstream', () =>
      upstream.upgrades === 1 ? true : undefined,
    );
    assert.equal(upstream.connections, 1);

    client.resetAndDestroy();

    // The route allows 10 s for the handshake: only the abort closes it this soon.
    await waitFor('the upstream connection closed', () =>
      upstream.connections === 0 ? true : undefined,
    );
    const line = await upgradeLineOf(gw.logs, 'reset-1');
    assert.equal(line['http.response.status_code'], 499);
    assert.equal(line['http.route'], 'live');
  });

  test('a client that ends its side (FIN) during the handshake has left too', async (t) => {
    const upstream = await wsUpstream(t, -1);
    const gw = await gatewayFor(t, [{ id: 'live', upstream: upstream.url }]);
    const client = rawClient(t, gw);
    client.write(handshake('/v1/live', await gw.token(), 'fin-1'));
    await waitFor('the upgrade at the upstream', () =>
      upstream.upgrades === 1 ? true : undefined,
    );
    client.end();
    // Within the 10 s the route allows: only noticing the FIN closes it this soon.
    await waitFor('the upstream connection closed', () =>
      upstream.connections === 0 ? true : undefined,
    );
    const line = await upgradeLineOf(gw.logs, 'fin-1');
    assert.equal(line['http.response.status_code'], 499);
    assert.equal(line['portaria.reason'], undefined, 'not an upstream timeout');
  });

  test('a 101 the upstream sends after the client left opens no session', async (t) => {
    const upstream = await wsUpstream(t, 400);
    const gw = await gatewayFor(t, [{ id: 'live', upstream: upstream.url }]);
    const client = rawClient(t, gw);
    client.write(handshake('/v1/live', await gw.token(), 'late-1'));
    await waitFor('the upgrade at the upstream', () =>
      upstream.upgrades === 1 ? true : undefined,
    );

    client.resetAndDestroy();

    await waitFor('the upstream connection closed', () =>
      upstream.connections === 0 ? true : undefined,
    );
    await sleep(600); // past the upstream's 400 ms: its 101 would have come by now
    assert.equal(upstream.connections, 0);
    assert.equal(upstream.openSessions, 0, 'no upstream session left open');
    assert.equal((await upgradeLineOf(gw.logs, 'late-1'))['http.response.status_code'], 499);
  });

  test('a token revoked during the handshake gets 401 token-revoked and the upstream request is aborted', async (t) => {
    const upstream = await wsUpstream(t, 5000);
    const gw = await gatewayFor(t, [{ id: 'live', upstream: upstream.url }]);
    const token = await gw.token();
    const client = rawClient(t, gw);
    const answer = readToClose(client);
    client.write(handshake('/v1/live', token, 'revoked-1'));
    await waitFor('the upgrade at the upstream', () =>
      upstream.upgrades === 1 ? true : undefined,
    );

    await gw.app.revoke(decodeJwt(token).jti as string);

    const res = onlyResponse(await answer);
    assert.equal(res.status, 401);
    assert.equal(rawProblemOf(res).tipo, 'urn:portaria:problem:token-revoked');
    assert.equal(
      headerOf(res, 'www-authenticate'),
      'Bearer realm="portaria", error="invalid_token", ' +
        'resource_metadata="https://portaria.test/.well-known/oauth-protected-resource/v1/live"',
    );
    assert.equal(headerOf(res, 'x-request-id'), 'revoked-1');
    await waitFor('the upstream connection closed', () =>
      upstream.connections === 0 ? true : undefined,
    );
    assert.equal(upstream.sessions, 0);
    const line = await upgradeLineOf(gw.logs, 'revoked-1');
    assert.equal(line['http.response.status_code'], 401);
    assert.equal(line['portaria.reason'], 'revoked');
    assert.equal(
      parsedLogs(gw.logs).some((l) => l.msg === 'websocket closed'),
      false,
      'no tunnel was open, so none was closed',
    );
  });
});

describe('upgrade access lines and request metrics', () => {
  test('101, 502, 504 and 401 each get one line with the real outcome and count in portaria_http_requests_total; the open tunnel in portaria_websocket_tunnels_open', async (t) => {
    const live = await wsUpstream(t);
    const mute = await wsUpstream(t, -1);
    const gw = await gatewayFor(t, [
      { id: 'live', upstream: live.url },
      { id: 'down', upstream: NOBODY_LISTENS },
      { id: 'mute', upstream: mute.url, timeoutMs: 300 },
    ]);
    const token = await gw.token();

    const open = rawClient(t, gw);
    const switched = new Promise<string>((resolve) => {
      let text = '';
      open.setEncoding('latin1');
      open.on('data', (chunk: string) => {
        text += chunk;
        if (text.includes('\r\n\r\n')) resolve(text);
      });
    });
    open.write(handshake('/v1/live', token, 'up-101'));
    assert.match(await switched, /^HTTP\/1\.1 101 /);
    const statuses = await Promise.all([
      rawRequest(gw.url, handshake('/v1/down', token, 'up-502')),
      rawRequest(gw.url, handshake('/v1/mute', token, 'up-504')),
      rawRequest(gw.url, handshake('/v1/live', undefined, 'up-401')),
    ]).then((raws) => raws.map((raw) => onlyResponse(raw).status));
    assert.deepEqual(statuses, [502, 504, 401]);

    const ok = await upgradeLineOf(gw.logs, 'up-101');
    assert.equal(ok.msg, 'upgrade');
    assert.equal(ok.log, 'access');
    assert.equal(ok.level, 'info');
    assert.equal(ok['http.request.method'], 'GET');
    assert.equal(ok['http.route'], 'live');
    assert.equal(ok['http.response.status_code'], 101);
    assert.equal(ok['portaria.client_id'], 'acme');
    assert.equal(typeof ok['portaria.duration_ms'], 'number');
    const expected: [string, string, number, string, string][] = [
      ['up-502', 'upgrade failed', 502, 'down', 'upstream-refused'],
      ['up-504', 'upgrade failed', 504, 'mute', 'upstream-timeout'],
      ['up-401', 'upgrade', 401, 'unmatched', 'no-authorization'],
    ];
    for (const [reqId, msg, status, route, reason] of expected) {
      const line = await upgradeLineOf(gw.logs, reqId);
      assert.deepEqual(
        [
          line.msg,
          line.level,
          line['http.response.status_code'],
          line['http.route'],
          line['portaria.reason'],
        ],
        [msg, status >= 500 ? 'warn' : 'info', status, route, reason],
        reqId,
      );
      assert.equal(typeof line['portaria.duration_ms'], 'number', reqId);
    }
    const lines = parsedLogs(gw.logs).filter((l) =>
      String(l['portaria.request_id']).startsWith('up-'),
    );
    assert.equal(lines.length, 4, 'one line per upgrade');

    const text = await scrape(gw.adminUrl);
    assert.equal(requestsTotal(text, 'live', 'unsafe', '1xx'), 1);
    assert.equal(requestsTotal(text, 'down', 'unsafe', '5xx'), 1);
    assert.equal(requestsTotal(text, 'mute', 'unsafe', '5xx'), 1);
    assert.equal(requestsTotal(text, 'unmatched', 'unsafe', '4xx'), 1);
    assert.equal(
      sample(text, 'portaria_http_requests_in_flight'),
      0,
      'an open tunnel is no request in flight',
    );
    assert.equal(sample(text, 'portaria_websocket_tunnels_open'), 1, 'the open tunnel');
    assert.equal(sample(text, 'portaria_auth_failures_total{reason="no-authorization"}'), 1);
    open.destroy();
    await waitFor('the tunnel closed', async () =>
      sample(await scrape(gw.adminUrl), 'portaria_websocket_tunnels_open') === 0 ? true : undefined,
    );
  });
});

describe('what the upstream answers is relayed well framed', () => {
  test('a chunked non-101 answer arrives with Content-Length, its end-to-end fields, X-Request-Id, and the connection closes', async (t) => {
    // Like /tmp/review/d/chunkup.mjs: no upgrade listener, so Node answers as a request.
    const plain = createServer((_req, res) => {
      res.setHeader('content-type', 'text/plain');
      res.setHeader('set-cookie', 'sess=abc');
      res.setHeader('keep-alive', 'timeout=5');
      res.write('hello ');
      setTimeout(() => res.end('world'), 50);
    });
    plain.listen(0, '127.0.0.1');
    await once(plain, 'listening');
    t.after(() => {
      plain.closeAllConnections();
      plain.close();
    });
    const gw = await gatewayFor(t, [
      { id: 'plain', upstream: `http://127.0.0.1:${(plain.address() as { port: number }).port}` },
    ]);

    const started = performance.now();
    const raw = await rawRequest(gw.url, handshake('/v1/plain', await gw.token(), 'chunk-1'), 4000);

    assert.ok(performance.now() - started < 3000, 'the gateway closed the connection');
    const res = onlyResponse(raw);
    assert.equal(res.status, 200);
    assert.equal(res.body, 'hello world');
    assert.equal(headerOf(res, 'content-length'), '11');
    assert.equal(headerOf(res, 'transfer-encoding'), undefined);
    assert.equal(headerOf(res, 'keep-alive'), undefined);
    assert.equal(headerOf(res, 'connection'), 'close');
    assert.equal(headerOf(res, 'x-request-id'), 'chunk-1');
    assert.equal(headerOf(res, 'set-cookie'), 'sess=abc');
    assert.equal(headerOf(res, 'content-type'), 'text/plain');
    const line = await upgradeLineOf(gw.logs, 'chunk-1');
    assert.equal(line['http.response.status_code'], 200);
  });

  test('the 101 carries X-Request-Id and no hop-by-hop field but Connection and Upgrade', async (t) => {
    const upstream = await wsUpstream(t, 0, ['Keep-Alive: timeout=5', 'X-Upstream: yes']);
    const gw = await gatewayFor(t, [{ id: 'live', upstream: upstream.url }]);
    const client = rawClient(t, gw);
    const head = new Promise<string>((resolve) => {
      let text = '';
      client.setEncoding('latin1');
      client.on('data', (chunk: string) => {
        text += chunk;
        const end = text.indexOf('\r\n\r\n');
        if (end !== -1) resolve(text.slice(0, end));
      });
    });
    client.write(handshake('/v1/live', await gw.token(), 'switch-1'));

    const [statusLine, ...lines] = (await head).split('\r\n');
    assert.equal(statusLine, 'HTTP/1.1 101 Switching Protocols');
    const fields = new Map(
      lines.map((line) => {
        const colon = line.indexOf(':');
        return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
      }),
    );
    assert.equal(fields.get('x-request-id'), 'switch-1');
    assert.equal(fields.get('x-upstream'), 'yes');
    assert.equal(fields.get('connection')?.toLowerCase(), 'upgrade');
    assert.equal(fields.get('upgrade'), 'websocket');
    assert.equal(fields.has('keep-alive'), false);
    assert.equal(typeof fields.get('sec-websocket-accept'), 'string');
    assert.equal(upstream.openSessions, 1);
  });
});

describe('upgrades and shutdown', () => {
  test('an upgrade arriving during the drain is refused with 503 and Connection: close', async (t) => {
    const upstream = await wsUpstream(t);
    const gw = await gatewayFor(t, [{ id: 'live', upstream: upstream.url }], {
      shutdownGraceMs: 5000,
    });
    const token = await gw.token();
    const text = handshake('/v1/live', token, 'drain-1');
    const split = text.indexOf('Connection:');
    const client = rawClient(t, gw);
    const answer = readToClose(client);
    // A request begun before the drain keeps its connection out of the idle sweep.
    client.write(text.slice(0, split));
    await sleep(100);
    const stopping = gw.app.shutdown();
    await waitFor('the drain', () =>
      parsedLogs(gw.logs).some((l) => String(l.msg).startsWith('shutting down')) ? true : undefined,
    );
    client.write(text.slice(split));

    const res = onlyResponse(await answer);
    assert.equal(res.status, 503);
    assert.equal(headerOf(res, 'connection'), 'close');
    assert.equal(rawProblemOf(res).tipo, 'urn:portaria:problem:service-unavailable');
    assert.equal(upstream.upgrades, 0);
    const line = await upgradeLineOf(gw.logs, 'drain-1');
    assert.deepEqual(
      [line['http.response.status_code'], line['portaria.reason']],
      [503, 'shutting-down'],
    );
    await stopping;
  });

  test('at the grace limit an open tunnel is closed and a pending handshake is logged 499 shutdown-grace', async (t) => {
    const live = await wsUpstream(t);
    const mute = await wsUpstream(t, -1);
    const graceMs = 400;
    const gw = await gatewayFor(
      t,
      [
        { id: 'live', upstream: live.url },
        { id: 'mute', upstream: mute.url },
      ],
      { shutdownGraceMs: graceMs },
    );
    const token = await gw.token();
    const tunnel = rawClient(t, gw);
    const tunnelClosed = once(tunnel, 'close');
    const switched = new Promise<void>((resolve) => {
      tunnel.on('data', () => resolve());
    });
    tunnel.write(handshake('/v1/live', token, 'grace-open'));
    await switched;
    const pending = rawClient(t, gw);
    pending.write(handshake('/v1/mute', token, 'grace-pending'));
    await waitFor('the pending upgrade at the upstream', () =>
      mute.upgrades === 1 ? true : undefined,
    );

    const started = performance.now();
    await gw.app.shutdown();
    const stopMs = performance.now() - started;

    assert.ok(stopMs >= graceMs - 50, `an open tunnel holds the stop for the grace (${stopMs} ms)`);
    await tunnelClosed;
    await waitFor('both upstreams closed', () =>
      live.connections === 0 && mute.connections === 0 ? true : undefined,
    );
    const line = await upgradeLineOf(gw.logs, 'grace-pending');
    assert.deepEqual(
      [line['http.response.status_code'], line['portaria.reason']],
      [499, 'shutdown-grace'],
    );
    assert.equal((await upgradeLineOf(gw.logs, 'grace-open'))['http.response.status_code'], 101);
  });

  test('HTTP requests cut at the grace limit are logged with reason shutdown, not as the client leaving', async (t) => {
    const gw = await startGateway(t, {
      settings: () => ({ server: { host: '127.0.0.1', port: 0, shutdownGraceMs: 300 } }),
    });
    gw.upstream.handler = (req, res) => {
      if (req.url === '/v1/orders/half') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('partial');
      }
      // '/v1/orders/none': never answered.
    };
    const token = await gw.token();
    const send = (path: string, reqId: string) =>
      new Promise<IncomingMessage | null>((resolve) => {
        const req = request(`${gw.url}${path}`, {
          agent: false,
          headers: { authorization: `Bearer ${token}`, 'x-request-id': reqId },
        });
        req.on('response', (res) => {
          res.on('error', () => {});
          res.resume();
          resolve(res);
        });
        req.on('error', () => resolve(null));
        req.end();
      });
    const half = await send('/v1/orders/half', 'cut-half');
    assert.equal(half?.statusCode, 200);
    const none = send('/v1/orders/none', 'cut-none');
    await waitFor('both at the upstream', () =>
      gw.upstream.received.length === 2 ? true : undefined,
    );

    await gw.app.shutdown();
    assert.equal(await none, null);

    const lines = parsedLogs(gw.logs);
    const halfLine = lines.find((l) => l['portaria.request_id'] === 'cut-half');
    assert.deepEqual(
      [
        halfLine?.msg,
        halfLine?.level,
        halfLine?.['http.response.status_code'],
        halfLine?.['portaria.reason'],
      ],
      ['request failed', 'warn', 200, 'shutdown'],
    );
    const noneLine = lines.find((l) => l['portaria.request_id'] === 'cut-none');
    assert.deepEqual(
      [noneLine?.msg, noneLine?.['http.response.status_code'], noneLine?.['portaria.reason']],
      ['request', 499, 'shutdown-grace'],
    );
  });

  test('a client that leaves on its own during the drain is a 499 of its own, not a shutdown cut', async (t) => {
    const gw = await startGateway(t, {
      settings: () => ({ server: { host: '127.0.0.1', port: 0, shutdownGraceMs: 5000 } }),
    });
    gw.upstream.handler = () => {}; // never answers
    const token = await gw.token();
    const req = request(`${gw.url}/v1/orders/slow`, {
      agent: false,
      headers: { authorization: `Bearer ${token}`, 'x-request-id': 'left-1' },
    });
    req.on('error', () => {});
    req.end();
    await waitFor('the request at the upstream', () =>
      gw.upstream.received.length === 1 ? true : undefined,
    );
    const stopping = gw.app.shutdown();
    await waitFor('the drain', () =>
      parsedLogs(gw.logs).some((l) => String(l.msg).startsWith('shutting down')) ? true : undefined,
    );
    // Leaving is a reset: a FIN alone is a half-close, whose request is still answered
    // (server.halfClosedRequests: answer).
    req.socket?.resetAndDestroy();
    await stopping;
    const line = parsedLogs(gw.logs).find((l) => l['portaria.request_id'] === 'left-1');
    assert.deepEqual(
      [line?.msg, line?.['http.response.status_code'], line?.['portaria.reason']],
      ['request', 499, undefined],
    );
  });
});

test('a stale revocation list refuses upgrades under the unsafe policy while safe requests pass', async (t) => {
  const redis = await startRedis(t);
  const gw = await startGateway(t, {
    settings: () => ({
      // The default policy: safe admitted, unsafe refused.
      revocation: { store: 'redis', maxSyncLagSeconds: 1 },
      redis: { url: redis.url, connectTimeoutMs: 500, commandTimeoutMs: 500 },
    }),
  });
  let upgrades = 0;
  gw.upstream.server.on('upgrade', (_req, socket: Socket) => {
    upgrades++;
    socket.destroy();
  });
  const token = await gw.token();
  const call = (method: string) =>
    fetch(`${gw.url}/v1/orders/1`, { method, headers: { authorization: `Bearer ${token}` } });
  await redis.stop();
  await waitFor(
    'stale',
    async () => ((await call('POST')).status === 503 ? true : undefined),
    5000,
  );

  assert.equal((await call('GET')).status, 200, 'a safe request is admitted');
  const res = onlyResponse(await rawRequest(gw.url, handshake('/v1/socket', token, 'stale-1')));
  assert.equal(res.status, 503);
  assert.equal(rawProblemOf(res).tipo, 'urn:portaria:problem:service-unavailable');
  assert.equal(upgrades, 0, 'nothing reached the upstream');
  const line = await upgradeLineOf(gw.logs, 'stale-1');
  assert.deepEqual(
    [line['http.response.status_code'], line['portaria.reason']],
    [503, 'revocation-stale'],
  );
});

describe('what reaches the upstream, and what comes back', () => {
  test('a 101 without Connection: upgrade is an invalid answer (502), never relayed as a 101', async (t) => {
    const server = createServer();
    server.on('connection', (socket: Socket) => {
      socket.on('error', () => {});
      socket.once('data', () => socket.end('HTTP/1.1 101 Switching Protocols\r\n\r\n'));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    t.after(() => new Promise((done) => server.close(done)));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const gw = await gatewayFor(t, [{ id: 'live', upstream: url }]);
    const res = onlyResponse(
      await rawRequest(gw.url, handshake('/v1/live', await gw.token(), 'bare-101')),
    );
    assert.equal(res.status, 502);
    const line = await upgradeLineOf(gw.logs, 'bare-101');
    assert.equal(line['http.response.status_code'], 502);
  });

  test('the upstream gets the path as checked, "http:/" inside it included', async (t) => {
    const paths: string[] = [];
    const upstream = createServer();
    upstream.on('upgrade', (req: IncomingMessage, socket: Socket) => {
      paths.push(req.url ?? '');
      socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    t.after(() => new Promise((done) => upstream.close(done)));
    const url = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;
    const gw = await gatewayFor(t, [{ id: 'live', upstream: url }]);
    const res = onlyResponse(
      await rawRequest(gw.url, handshake('/v1/live/http:/evil?x=https:/y', await gw.token())),
    );
    assert.equal(res.status, 403);
    assert.deepEqual(paths, ['/v1/live/http:/evil?x=https:/y']);
  });
});

describe('a handshake that announces a body', () => {
  const cases: ReadonlyArray<[string, string]> = [
    ['Content-Length: 5', 'Content-Length: 5\r\n\r\nhello'],
    ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n'],
    ['Content-Length announced, body never sent', 'Content-Length: 100\r\n\r\n'],
  ];
  for (const [name, tail] of cases) {
    test(`${name} → 400 at once, nothing reaches the upstream`, async (t) => {
      const upstream = await wsUpstream(t);
      const gw = await gatewayFor(t, [{ id: 'live', upstream: upstream.url }]);
      const token = await gw.token();
      const started = performance.now();
      const raw = await rawRequest(
        gw.url,
        handshake('/v1/live', token, 'with-body').replace(/\r\n\r\n$/, `\r\n${tail}`),
        3000,
      );
      const res = onlyResponse(raw);
      assert.equal(res.status, 400, raw.slice(0, 200));
      assert.equal(headerOf(res, 'connection'), 'close');
      assert.equal(rawProblemOf(res).tipo, 'urn:portaria:problem:invalid-request');
      assert.ok(performance.now() - started < 2000, 'not held until the route times out');
      assert.equal(upstream.upgrades, 0);
      const line = await upgradeLineOf(gw.logs, 'with-body');
      assert.equal(line['http.response.status_code'], 400);
      assert.equal(line['portaria.reason'], 'upgrade-with-body');
    });
  }

  test('Content-Length: 0 is no body: the handshake goes through', async (t) => {
    const upstream = await wsUpstream(t);
    const gw = await gatewayFor(t, [{ id: 'live', upstream: upstream.url }]);
    const socket = rawClient(t, gw);
    socket.write(
      handshake('/v1/live', await gw.token()).replace(/\r\n\r\n$/, '\r\nContent-Length: 0\r\n\r\n'),
    );
    const [chunk] = (await once(socket, 'data')) as [Buffer];
    assert.match(chunk.toString('latin1'), /^HTTP\/1\.1 101 /);
    assert.equal(upstream.upgrades, 1);
  });
});
