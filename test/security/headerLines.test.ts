/**
 * Header-line limit and declined upgrade offers, over raw TCP. Node keeps only a bounded
 * number of header lines (older Node drops the rest silently, newer Node answers 431): a
 * request whose lines reach `server.maxHeaderLines` is refused with 431 and the connection
 * closes, on every Node version, before anything is forwarded — a `Content-Length` cut off
 * past the limit would otherwise turn the body into a second request. A non-WebSocket
 * `Upgrade` offer (h2c) is answered from Node's own parse of the request, never from a
 * copy of it parsed again.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import { type Gateway, startGateway } from '../helpers/fixture.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { headerOf, onlyResponse, parseResponses, rawProblemOf } from '../helpers/rawResponse.js';
import { parsedLogs, waitFor } from '../helpers/wait.js';

const MAX_HEADER_LINES = 100;

/** Node ≥ 24.9 declines upgrade offers itself (shouldUpgradeCallback). */
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
const NODE_DECLINES_UPGRADES = major > 24 || (major === 24 && minor >= 9);

async function lineLimitGateway(t: TestContext): Promise<{ gw: Gateway; token: string }> {
  const gw = await startGateway(t, {
    settings: () => ({
      server: {
        host: '127.0.0.1',
        port: 0,
        requestTimeoutMs: 1000,
        headersTimeoutMs: 1000,
        keepAliveTimeoutMs: 1000,
        shutdownGraceMs: 500,
      },
    }),
  });
  return { gw, token: await gw.token() };
}

/** `count` filler header lines, `a0: b` … */
function filler(count: number): string {
  let lines = '';
  for (let i = 0; i < count; i++) lines += `a${i}: b\r\n`;
  return lines;
}

/**
 * Writes `first`, and `second` once the first answer arrived if the connection is still
 * open; resolves with everything read until the connection closes (or `timeoutMs`).
 */
function exchange(gw: Gateway, first: string, second: string, timeoutMs = 3000) {
  const { port } = new URL(gw.url);
  return new Promise<{ raw: string; closed: boolean }>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: Number(port) });
    let raw = '';
    let sentSecond = false;
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ raw, closed });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      raw += chunk.toString('latin1');
      if (!sentSecond && raw.includes('\r\n\r\n') && !socket.writableEnded) {
        sentSecond = true;
        socket.write(second);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => finish(true));
    socket.write(first);
  });
}

describe('a request whose header lines reach server.maxHeaderLines', () => {
  test('the Upgrade capture: 431, connection closed, nothing forwarded, the next caller’s token never read', async (t) => {
    const { gw, token } = await lineLimitGateway(t);
    const victimToken = await gw.token();
    const captured =
      'POST /v1/capture HTTP/1.1\r\nHost: x\r\n' +
      `Authorization: Bearer ${token}\r\nContent-Length: 110\r\n\r\nstolen=`;
    const outer =
      `POST /v1/outer HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
      `Connection: Upgrade\r\nUpgrade: h2c\r\n${filler(1100)}` +
      `Content-Length: ${Buffer.byteLength(captured)}\r\n\r\n${captured}`;
    const victim = `GET /v1/victim HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${victimToken}\r\n\r\n`;
    const { raw, closed } = await exchange(gw, outer, victim);

    assert.ok(
      !gw.upstream.received.some((r) => r.body.toString('latin1').includes(victimToken)),
      'the next caller’s token is never read into a body',
    );
    assert.deepEqual(
      gw.upstream.received.map((r) => `${r.method} ${r.url}`),
      [],
      'nothing reached the upstream',
    );
    const refusal = onlyResponse(raw);
    assert.equal(refusal.status, 431);
    assert.equal(headerOf(refusal, 'connection'), 'close');
    assert.ok(closed, 'the gateway closes the connection');
  });

  const cases: ReadonlyArray<[string, number, number]> = [
    // [name, filler lines (plus Host, Authorization and Content-Length), expected status]
    ['one line under the limit', MAX_HEADER_LINES - 4, 200],
    ['exactly at the limit', MAX_HEADER_LINES - 3, 431],
    ['past the limit, Content-Length last', MAX_HEADER_LINES + 50, 431],
    ['far past Node’s own limit', 1100, 431],
  ];
  for (const [name, lines, status] of cases) {
    test(`${name} (${lines + 3} lines) → ${status}`, async (t) => {
      const { gw, token } = await lineLimitGateway(t);
      const smuggled = `GET /v1/smuggled HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`;
      const request =
        `POST /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        `${filler(lines)}Content-Length: ${smuggled.length}\r\n\r\n${smuggled}`;
      const raw = await rawRequest(gw.url, request, 2000);
      const responses = parseResponses(raw);
      assert.equal(responses[0]?.status, status, raw.slice(0, 300));
      const urls = gw.upstream.received.map((r) => r.url);
      assert.ok(!urls.includes('/v1/smuggled'), 'the body is never read as a request');
      if (status === 431) {
        const refusal = onlyResponse(raw);
        assert.equal(headerOf(refusal, 'connection'), 'close');
        const problem = rawProblemOf(refusal);
        assert.equal(problem.tipo, 'urn:portaria:problem:headers-too-large');
        assert.equal(problem.status, 431);
        assert.deepEqual(urls, []);
      } else {
        assert.deepEqual(urls, ['/v1/orders']);
        assert.equal(gw.upstream.received[0]?.body.toString('latin1'), smuggled);
      }
    });
  }

  test('a WebSocket handshake with too many header lines → 431 on the socket, no tunnel', async (t) => {
    const { gw, token } = await lineLimitGateway(t);
    let upstreamUpgrades = 0;
    gw.upstream.server.on('upgrade', (_req, socket) => {
      upstreamUpgrades++;
      socket.destroy();
    });
    const raw = await rawRequest(
      gw.url,
      `GET /v1/orders/ws HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n' +
        `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${filler(200)}\r\n`,
      2000,
    );
    const refusal = onlyResponse(raw);
    assert.equal(refusal.status, 431);
    assert.equal(headerOf(refusal, 'connection'), 'close');
    assert.equal(upstreamUpgrades, 0);
  });

  test('the refusal is logged with its reason and counted under the request', async (t) => {
    const { gw, token } = await lineLimitGateway(t);
    await rawRequest(
      gw.url,
      `GET /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n${filler(150)}\r\n`,
      2000,
    );
    const reasons = await waitFor('a refusal line', () => {
      const found = parsedLogs(gw.logs)
        // The access line's reason, or the parser refusal's (an event line).
        .map((l) => l['portaria.reason'] ?? l.reason)
        .filter((r) => r === 'header-lines' || r === 'header-overflow');
      return found.length > 0 ? found : undefined;
    });
    // Newer Node refuses past its own limit in its parser (header-overflow); at or under
    // it, and on older Node, the gateway counts the lines (header-lines).
    assert.ok(reasons.length >= 1);
  });
});

describe('a declined upgrade offer (h2c) is answered from Node’s own parse', () => {
  test('a body announced by Content-Length reaches the upstream exactly, nothing after it is read as a request', async (t) => {
    const { gw, token } = await lineLimitGateway(t);
    const pipelined = 'GET /v1/after HTTP/1.1\r\nHost: x\r\n\r\n';
    const raw = await rawRequest(
      gw.url,
      `POST /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n' +
        `Content-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello${pipelined}`,
      2000,
    );
    const responses = parseResponses(raw);
    assert.equal(responses[0]?.status, 200, raw.slice(0, 300));
    const seen = gw.upstream.received[0];
    assert.equal(seen?.url, '/v1/orders');
    assert.equal(seen?.body.toString(), 'hello');
    assert.equal(seen?.headers.upgrade, undefined);
    assert.ok(!gw.upstream.received.some((r) => r.url === '/v1/after'), 'unauthenticated');
  });

  test('a chunked body: served on Node that declines offers itself, 400 where the gateway must', async (t) => {
    const { gw, token } = await lineLimitGateway(t);
    const raw = await rawRequest(
      gw.url,
      `POST /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        'Connection: Upgrade\r\nUpgrade: h2c\r\nTransfer-Encoding: chunked\r\n\r\n' +
        '5\r\nhello\r\n0\r\n\r\n',
      2000,
    );
    const first = parseResponses(raw)[0];
    if (NODE_DECLINES_UPGRADES) {
      assert.equal(first?.status, 200, raw.slice(0, 300));
      assert.equal(gw.upstream.received[0]?.body.toString(), 'hello');
    } else {
      assert.equal(first?.status, 400, raw.slice(0, 300));
      assert.equal(headerOf(first as never, 'connection'), 'close');
      assert.equal(rawProblemOf(first as never).tipo, 'urn:portaria:problem:invalid-request');
      assert.deepEqual(gw.upstream.received, []);
    }
  });

  test('a body that stops arriving → 408 after server.requestTimeoutMs, nothing forwarded twice', async (t) => {
    const { gw, token } = await lineLimitGateway(t);
    const raw = await rawRequest(
      gw.url,
      `POST /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        'Connection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 10\r\n\r\nabc',
      4000,
    );
    const responses = parseResponses(raw);
    assert.equal(responses.length, 1, raw.slice(0, 300));
    assert.equal(responses[0]?.status, 408);
  });

  test('Expect: 100-continue gets its 100 Continue once the request is accepted', async (t) => {
    const { gw, token } = await lineLimitGateway(t);
    const { port } = new URL(gw.url);
    const raw = await new Promise<string>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port: Number(port) });
      let text = '';
      let sentBody = false;
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        if (!sentBody && text.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
          sentBody = true;
          socket.write('hello');
        }
      });
      socket.on('close', () => resolve(text));
      setTimeout(() => socket.destroy(), 3000);
      socket.write(
        `POST /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
          'Connection: Upgrade\r\nUpgrade: h2c\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n',
      );
    });
    assert.match(raw, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    assert.equal(gw.upstream.received[0]?.body.toString(), 'hello');
  });
});
