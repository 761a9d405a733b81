/**
 * Message framing between the client, the gateway and the upstream (RFC 9110, RFC 9112),
 * with a raw TCP upstream that answers exactly as scripted: an answer before the request
 * body ended, a 304 or 204 carrying Content-Length, transfer codings other than chunked
 * in either direction, TRACE, and `Expect: 100-continue` (the 100 only for an accepted
 * request).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type Gateway,
  startGateway,
  TOKEN_PATH,
} from '../helpers/fixture.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { headerOf, onlyResponse, parseResponses, rawProblemOf } from '../helpers/rawResponse.js';
import { accessLineOf } from '../helpers/wait.js';

/** Scripted answers by request path; every request head the upstream saw. */
interface RawUpstream {
  url: string;
  heads: string[];
}

const ANSWERS: Record<string, string> = {
  // Answers as soon as the head arrived, before the body (and then ignores the body).
  '/early': 'HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n',
  '/not-modified': 'HTTP/1.1 304 Not Modified\r\netag: "v1"\r\ncontent-length: 10\r\n\r\n',
  '/no-content': 'HTTP/1.1 204 No Content\r\ncontent-length: 5\r\n\r\n',
  '/gzip-coded':
    'HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n5\r\n\x1f\x8b\x08\x00\x00\r\n0\r\n\r\n',
};
const OK = 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok';

async function rawUpstream(t: TestContext): Promise<RawUpstream> {
  const heads: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buffered = '';
    let discard = false;
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      if (discard) return;
      buffered += chunk.toString('latin1');
      for (let end = buffered.indexOf('\r\n\r\n'); end !== -1; end = buffered.indexOf('\r\n\r\n')) {
        const head = buffered.slice(0, end);
        buffered = buffered.slice(end + 4);
        heads.push(head);
        const path = head.split(' ')[1] ?? '';
        socket.write(ANSWERS[path] ?? OK);
        // Bodies are never read: only bodiless requests reach the other paths.
        if (path === '/early') discard = true;
        if (discard) return;
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, heads };
}

async function framedGateway(t: TestContext): Promise<{ gw: Gateway; upstream: RawUpstream }> {
  const upstream = await rawUpstream(t);
  const gw = await startGateway(t, {
    settings: () => ({ upstream: { default: { upstream: upstream.url } } }),
  });
  return { gw, upstream };
}

function get(gw: Gateway, token: string, path: string): string {
  const host = new URL(gw.url).host;
  return `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\n\r\n`;
}

const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

/**
 * Sends a request head with `Expect: 100-continue` and `Connection: close`, then the body
 * only if a `100 Continue` arrives (as curl does); returns everything the gateway sent.
 */
async function expectContinue(gw: Gateway, head: string, body: string): Promise<string> {
  const { hostname, port } = new URL(gw.url);
  const socket = netConnect({ host: hostname, port: Number(port) });
  socket.on('error', () => {});
  let received = '';
  let sentBody = false;
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
    if (!sentBody && received.startsWith(CONTINUE)) {
      sentBody = true;
      socket.write(body);
    }
  });
  socket.write(
    `${head}Host: ${hostname}:${port}\r\nExpect: 100-continue\r\nConnection: close\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
  );
  const timer = setTimeout(() => socket.destroy(), 3000);
  await once(socket, 'close');
  clearTimeout(timer);
  return received;
}

describe('framing between client, gateway and upstream', () => {
  test('an upstream answering before the request body ended: the response says Connection: close and the connection closes', async (t) => {
    const { gw, upstream } = await framedGateway(t);
    const token = await gw.token();
    const { hostname, port } = new URL(gw.url);
    const socket = netConnect({ host: hostname, port: Number(port) });
    t.after(() => socket.destroy());
    socket.on('error', () => {});
    const total = 4 * 1024 * 1024;
    socket.write(
      `POST /early HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${token}\r\n` +
        `Content-Type: application/octet-stream\r\nContent-Length: ${total}\r\n\r\n`,
    );
    socket.write(Buffer.alloc(64 * 1024, 0x61));
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    // The client stops sending (as a client that got its answer would); the connection
    // must end without waiting for the keep-alive timeout or the rest of the body.
    const closed = once(socket, 'close');
    const bounded = new Promise((_, reject) =>
      setTimeout(() => reject(new Error('the connection was left open')), 3000).unref(),
    );
    await Promise.race([closed, bounded]);
    const res = onlyResponse(received);
    assert.equal(res.status, 401);
    assert.equal(headerOf(res, 'connection'), 'close');
    assert.equal(upstream.heads.length, 1);
    // The gateway keeps serving other connections.
    assert.equal(onlyResponse(await rawRequest(gw.url, get(gw, token, '/ok'), 2000)).status, 200);
  });

  test('a 304 with Content-Length is relayed whole, and the connection stays usable', async (t) => {
    const { gw } = await framedGateway(t);
    const token = await gw.token();
    const raw = await rawRequest(
      gw.url,
      get(gw, token, '/not-modified') +
        get(gw, token, '/ok').replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'),
      3000,
    );
    const [first, second] = parseResponses(raw);
    assert.equal(first?.status, 304);
    assert.equal(headerOf(first as never, 'etag'), '"v1"');
    assert.equal(second?.status, 200);
    const line = await accessLineOf(gw.logs, headerOf(first as never, 'x-request-id') as string);
    assert.equal(line['http.response.status_code'], 304);
    assert.equal(line['portaria.reason'], undefined);
  });

  test('a 204 with Content-Length is relayed without it (RFC 9110 §8.6)', async (t) => {
    const { gw } = await framedGateway(t);
    const token = await gw.token();
    const res = onlyResponse(
      await rawRequest(
        gw.url,
        get(gw, token, '/no-content').replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'),
        3000,
      ),
    );
    assert.equal(res.status, 204);
    assert.equal(headerOf(res, 'content-length'), undefined);
  });

  test('an upstream response in a transfer coding other than chunked is refused with 502, never relayed undecoded', async (t) => {
    const { gw } = await framedGateway(t);
    const res = await fetch(`${gw.url}/gzip-coded`, {
      headers: { authorization: `Bearer ${await gw.token()}` },
    });
    assert.equal(res.status, 502);
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal(body.tipo, 'urn:portaria:problem:upstream-unavailable');
  });

  for (const path of ['/v1/orders', TOKEN_PATH]) {
    test(`a request body in a transfer coding other than chunked → 501 on ${path}, nothing forwarded`, async (t) => {
      const { gw, upstream } = await framedGateway(t);
      const token = await gw.token();
      const { host } = new URL(gw.url);
      const raw = await rawRequest(
        gw.url,
        `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\n` +
          'Content-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n' +
          '5\r\n\x1f\x8b\x08\x00\x00\r\n0\r\n\r\n',
        3000,
      );
      const res = onlyResponse(raw);
      assert.equal(res.status, 501);
      assert.equal(rawProblemOf(res).tipo, 'urn:portaria:problem:not-implemented');
      assert.equal(headerOf(res, 'connection'), 'close');
      assert.equal(upstream.heads.length, 0);
    });
  }

  test('a chunked request body is still forwarded', async (t) => {
    const { gw, upstream } = await framedGateway(t);
    const token = await gw.token();
    const { host } = new URL(gw.url);
    const res = onlyResponse(
      await rawRequest(
        gw.url,
        `POST /ok HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\n` +
          'Transfer-Encoding: Chunked\r\nConnection: close\r\n\r\n2\r\nhi\r\n0\r\n\r\n',
        3000,
      ),
    );
    assert.equal(res.status, 200);
    assert.equal(upstream.heads.length, 1);
  });

  test('Expect: 100-continue without a token → 401 at once, no 100 Continue, nothing forwarded', async (t) => {
    const { gw, upstream } = await framedGateway(t);
    const raw = await expectContinue(gw, 'POST /ok HTTP/1.1\r\n', 'x'.repeat(10));
    assert.ok(!raw.startsWith(CONTINUE), raw);
    const res = onlyResponse(raw);
    assert.equal(res.status, 401);
    assert.equal(headerOf(res, 'connection'), 'close');
    assert.equal(upstream.heads.length, 0);
  });

  test('Expect: 100-continue with a valid token → 100 Continue, then the body is forwarded', async (t) => {
    const { gw, upstream } = await framedGateway(t);
    const token = await gw.token();
    const raw = await expectContinue(
      gw,
      `POST /ok HTTP/1.1\r\nAuthorization: Bearer ${token}\r\n`,
      'hello',
    );
    assert.ok(raw.startsWith(CONTINUE), raw);
    assert.equal(onlyResponse(raw.slice(CONTINUE.length)).status, 200);
    assert.equal(upstream.heads.length, 1);
    assert.doesNotMatch(upstream.heads[0] as string, /expect/i);
  });

  test('Expect: 100-continue on the token operation: 100 before the credentials are read; none for a body over the limit', async (t) => {
    const { gw } = await framedGateway(t);
    const credentials = JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });
    const head = `POST ${TOKEN_PATH} HTTP/1.1\r\nContent-Type: application/json\r\n`;
    const issued = await expectContinue(gw, head, credentials);
    assert.ok(issued.startsWith(CONTINUE), issued);
    assert.equal(onlyResponse(issued.slice(CONTINUE.length)).status, 200);
    const tooLarge = await expectContinue(gw, head, 'x'.repeat(20_000));
    assert.ok(!tooLarge.startsWith(CONTINUE), tooLarge.slice(0, 200));
    assert.equal(onlyResponse(tooLarge).status, 413);
  });

  test('Expect: 100-continue on a GET of the key set: served, and the connection stays open', async (t) => {
    const { gw } = await framedGateway(t);
    const { hostname, port } = new URL(gw.url);
    const host = `${hostname}:${port}`;
    const raw = await rawRequest(
      gw.url,
      `GET /.well-known/jwks.json HTTP/1.1\r\nHost: ${host}\r\nExpect: 100-continue\r\n\r\n` +
        `GET /.well-known/jwks.json HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      3000,
    );
    assert.ok(raw.startsWith(CONTINUE), raw.slice(0, 100));
    const [first, second] = parseResponses(raw.slice(CONTINUE.length));
    assert.equal(first?.status, 200);
    assert.notEqual(headerOf(first as never, 'connection'), 'close');
    assert.equal(second?.status, 200, 'a second request on the same connection');
  });

  for (const method of ['TRACE', 'PROPFIND', 'MKCOL', 'LOCK', 'PURGE', 'SEARCH']) {
    test(`${method} is answered 405 by the gateway, never forwarded`, async (t) => {
      const { gw, upstream } = await framedGateway(t);
      const token = await gw.token();
      const raw = onlyResponse(
        await rawRequest(
          gw.url,
          get(gw, token, '/v1/orders')
            .replace('GET', method)
            .replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'),
          3000,
        ),
      );
      assert.equal(raw.status, 405);
      assert.equal(headerOf(raw, 'allow'), 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
      assert.equal(upstream.heads.length, 0);
    });
  }
});
