import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { NOBODY_LISTENS } from '../helpers/process.js';
import { listen, route, send, startGateway } from './gateway.js';

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

describe('forwarder', () => {
  test('a 5 MB request body streams to the upstream intact and its echo streams back', async (t) => {
    let upstreamHash = '';
    const upstream = http.createServer((req, res) => {
      const hash = createHash('sha256');
      req.on('data', (chunk: Buffer) => hash.update(chunk));
      req.on('end', () => {
        upstreamHash = hash.digest('hex');
      });
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      req.pipe(res);
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('echo', '/v1/echo', `http://127.0.0.1:${upstreamPort}`),
    ]);

    const payload = randomBytes(5 * 1024 * 1024);
    const reply = await send(`${gateway.url}/v1/echo`, {
      method: 'PUT',
      headers: { 'content-length': String(payload.length) },
      body: payload,
    });

    assert.equal(reply.status, 200);
    assert.equal(upstreamHash, sha256(payload));
    assert.equal(reply.body.length, payload.length);
    assert.equal(sha256(reply.body), sha256(payload));
  });

  test('the upstream sees base path, path and query, the principal identity and no hop-by-hop or spoofed headers', async (t) => {
    let seen: { url: string | undefined; headers: IncomingHttpHeaders; raw: string[] } | undefined;
    const upstream = http.createServer((req, res) => {
      seen = { url: req.url, headers: req.headers, raw: req.rawHeaders };
      res.writeHead(200, {
        connection: 'keep-alive, x-upstream-hop',
        'keep-alive': 'timeout=5',
        'x-upstream-hop': 'secret',
        'x-request-id': 'upstream-chosen',
        'content-type': 'text/plain',
      });
      res.end('ok');
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('orders', '/v1/orders', `http://127.0.0.1:${upstreamPort}/api`),
    ]);

    const reply = await send(`${gateway.url}/v1/orders/42?expand=items`, {
      headers: {
        connection: 'close, x-hop',
        'x-hop': 'drop me',
        'X-Client-Id': 'admin',
        X_Client_Id: 'admin',
        'x-client_id': 'admin',
        'X-Token-Scope': 'admin:all',
        'x-forwarded-for': '10.0.0.1',
        'x-request-id': 'client-chosen',
        authorization: 'Bearer token-value',
        accept: 'text/plain',
      },
    });

    assert.equal(reply.status, 200);
    assert.equal(reply.body.toString(), 'ok');
    assert.equal(reply.headers['x-request-id'], 'req-1');
    assert.equal(reply.headers['x-upstream-hop'], undefined);
    assert.equal(reply.headers['keep-alive'], undefined);

    assert.ok(seen !== undefined);
    assert.equal(seen.url, '/api/v1/orders/42?expand=items');
    const names = seen.raw.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    assert.deepEqual(
      names.filter((n) => n === 'x-client-id' || n.replaceAll('_', '-') === 'x-client-id'),
      ['x-client-id'],
    );
    assert.equal(seen.headers['x-client-id'], 'client-a');
    assert.equal(seen.headers['x-token-scope'], 'orders:read orders:write');
    assert.equal(seen.headers['x-token-jti'], 'jti-1');
    assert.equal(seen.headers['x-request-id'], 'req-1');
    assert.equal(seen.headers['x-forwarded-for'], '127.0.0.1');
    assert.equal(seen.headers['x-forwarded-proto'], 'http');
    assert.equal(seen.headers['x-forwarded-host'], `127.0.0.1:${gateway.port}`);
    assert.equal(seen.headers.host, `127.0.0.1:${upstreamPort}`);
    assert.equal(seen.headers.authorization, 'Bearer token-value');
    assert.equal(seen.headers.accept, 'text/plain');
    assert.equal(seen.headers['x-hop'], undefined);
    assert.equal(names.includes('x_client_id'), false);
  });

  test('an upstream that refuses connections gives a 502 problem without internals', async (t) => {
    const gateway = await startGateway(t, [route('down', '/v1/down', NOBODY_LISTENS)]);

    const reply = await send(`${gateway.url}/v1/down/x`);

    assert.equal(reply.status, 502);
    assert.equal(reply.headers['content-type'], 'application/problem+json');
    assert.deepEqual(JSON.parse(reply.body.toString()), {
      tipo: 'urn:portaria:problem:upstream-unavailable',
      titulo: 'Upstream unavailable',
      status: 502,
      detalhe: 'The upstream service could not be reached.',
      instancia: '/v1/down/x#req-1',
    });
    assert.deepEqual(gateway.hookCalls, [
      { hook: 'upstreamError', routeId: 'down', value: 'refused' },
    ]);
  });

  test('an upstream slower than the route timeout gives a 504 after about the timeout', async (t) => {
    const upstream = http.createServer((_req, res) => {
      setTimeout(() => res.end('late'), 3000).unref();
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('slow', '/v1/slow', `http://127.0.0.1:${upstreamPort}`, 300),
    ]);

    const started = performance.now();
    const reply = await send(`${gateway.url}/v1/slow`);
    const elapsed = performance.now() - started;

    assert.equal(reply.status, 504);
    assert.deepEqual(JSON.parse(reply.body.toString()), {
      tipo: 'urn:portaria:problem:upstream-timeout',
      titulo: 'Upstream timeout',
      status: 504,
      detalhe: 'The upstream service did not answer in time.',
      instancia: '/v1/slow#req-1',
    });
    assert.ok(elapsed >= 290 && elapsed < 1500, `answered after ${elapsed} ms`);
    assert.deepEqual(gateway.hookCalls, [
      { hook: 'upstreamError', routeId: 'slow', value: 'timeout' },
    ]);
  });

  test('an upstream body stall longer than the route timeout truncates the response', async (t) => {
    const upstream = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-length': '10' });
      res.write('12345');
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('stall', '/v1/stall', `http://127.0.0.1:${upstreamPort}`, 300),
    ]);

    await assert.rejects(send(`${gateway.url}/v1/stall`), { code: 'ECONNRESET' });
    assert.deepEqual(gateway.hookCalls, [
      { hook: 'upstreamError', routeId: 'stall', value: 'timeout' },
    ]);
  });

  test('an upstream that resets mid-body gives the client a truncated response and the gateway keeps serving', async (t) => {
    let calls = 0;
    const upstream = http.createServer((_req, res) => {
      calls++;
      if (calls === 1) {
        res.writeHead(200, { 'content-length': '1000' });
        res.write(Buffer.alloc(100, 'a'), () => setTimeout(() => res.socket?.destroy(), 20));
      } else {
        res.end('fine');
      }
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('flaky', '/v1/flaky', `http://127.0.0.1:${upstreamPort}`),
    ]);

    const received = await new Promise<{ status: number; bytes: number; error: string }>(
      (resolve) => {
        http.get(`${gateway.url}/v1/flaky`, { agent: false }, (res) => {
          let bytes = 0;
          res.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
          });
          res.on('error', (error: NodeJS.ErrnoException) =>
            resolve({ status: res.statusCode ?? 0, bytes, error: error.code ?? '' }),
          );
          res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, error: '' }));
        });
      },
    );

    assert.deepEqual(received, { status: 200, bytes: 100, error: 'ECONNRESET' });
    assert.deepEqual(gateway.hookCalls, [
      { hook: 'upstreamError', routeId: 'flaky', value: 'reset' },
    ]);
    const next = await send(`${gateway.url}/v1/flaky`);
    assert.equal(next.body.toString(), 'fine');
  });

  test('a client that goes away while the upstream works makes the gateway abort the upstream request', async (t) => {
    let upstreamSawClose: () => void = () => {};
    const closed = new Promise<void>((resolve) => {
      upstreamSawClose = resolve;
    });
    let arrived: () => void = () => {};
    const requestArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const upstream = http.createServer((_req, res) => {
      res.on('close', () => {
        if (!res.writableFinished) upstreamSawClose();
      });
      arrived();
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('work', '/v1/work', `http://127.0.0.1:${upstreamPort}`),
    ]);

    const client = http.get(`${gateway.url}/v1/work`, { agent: false });
    client.on('error', () => {});
    await requestArrived;
    const abortedAt = performance.now();
    client.destroy();

    await closed;
    assert.ok(performance.now() - abortedAt < 1000, 'upstream request aborted promptly');
    await sleep(20);
    assert.deepEqual(gateway.hookCalls, []);
  });

  test('a client that goes away mid-upload makes the gateway abort the upstream request', async (t) => {
    let upstreamSawClose: () => void = () => {};
    const closed = new Promise<void>((resolve) => {
      upstreamSawClose = resolve;
    });
    let firstBytes: () => void = () => {};
    const bytesArrived = new Promise<void>((resolve) => {
      firstBytes = resolve;
    });
    const upstream = http.createServer((req, res) => {
      req.once('data', () => firstBytes());
      res.on('close', () => {
        if (!res.writableFinished) upstreamSawClose();
      });
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('upload', '/v1/upload', `http://127.0.0.1:${upstreamPort}`),
    ]);

    const client = http.request(`${gateway.url}/v1/upload`, {
      agent: false,
      method: 'POST',
      headers: { 'content-length': '1000000' },
    });
    client.on('error', () => {});
    client.write(Buffer.alloc(1000, 'b'));
    await bytesArrived;
    const abortedAt = performance.now();
    client.destroy();

    await closed;
    assert.ok(performance.now() - abortedAt < 1000, 'upstream request aborted promptly');
    await sleep(20);
    assert.deepEqual(gateway.hookCalls, []);
  });

  test('200 concurrent requests all succeed over the pooled connections', async (t) => {
    const upstream = http.createServer((req, res) => {
      setTimeout(() => res.end(req.url), 5);
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(
      t,
      [route('many', '/v1/many', `http://127.0.0.1:${upstreamPort}`)],
      { connections: 8 },
    );

    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) => send(`${gateway.url}/v1/many/${i}`)),
    );

    assert.deepEqual(
      replies.map((r) => [r.status, r.body.toString()]),
      Array.from({ length: 200 }, (_, i) => [200, `/v1/many/${i}`]),
    );
  });

  test('a chunked POST body reaches the upstream whole, still chunked', async (t) => {
    let seen: { method: string | undefined; te: string | undefined; body: string } | undefined;
    const upstream = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      seen = {
        method: req.method,
        te: req.headers['transfer-encoding'],
        body: Buffer.concat(chunks).toString(),
      };
      res.writeHead(201).end();
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('items', '/v1/items', `http://127.0.0.1:${upstreamPort}`),
    ]);

    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        `${gateway.url}/v1/items`,
        { agent: false, method: 'POST' },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.write('first,');
      setTimeout(() => req.write('second,'), 20);
      setTimeout(() => req.end('third'), 40);
    });

    assert.equal(status, 201);
    assert.deepEqual(seen, { method: 'POST', te: 'chunked', body: 'first,second,third' });
  });

  test('a HEAD request gets the upstream headers and no body', async (t) => {
    let method: string | undefined;
    const upstream = http.createServer((req, res) => {
      method = req.method;
      res.writeHead(200, { 'content-length': '42', 'content-type': 'text/plain' });
      res.end();
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('head', '/v1/head', `http://127.0.0.1:${upstreamPort}`),
    ]);

    const reply = await send(`${gateway.url}/v1/head`, { method: 'HEAD' });

    assert.equal(method, 'HEAD');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-length'], '42');
    assert.equal(reply.body.length, 0);
    assert.deepEqual(
      gateway.hookCalls.map((c) => [c.hook, c.routeId, c.value]),
      [['upstreamResponse', 'head', 200]],
    );
  });

  test('several Set-Cookie headers from the upstream all reach the client', async (t) => {
    const upstream = http.createServer((_req, res) => {
      res.setHeader('set-cookie', ['a=1; Path=/', 'b=2; HttpOnly']);
      res.end();
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('cookies', '/v1/cookies', `http://127.0.0.1:${upstreamPort}`),
    ]);

    const reply = await send(`${gateway.url}/v1/cookies`);

    assert.deepEqual(reply.headers['set-cookie'], ['a=1; Path=/', 'b=2; HttpOnly']);
  });

  test('an informational 103 is not relayed and the final response is', async (t) => {
    const upstream = http.createServer((_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('final');
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('hints', '/v1/hints', `http://127.0.0.1:${upstreamPort}`),
    ]);

    let informational = 0;
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.get(`${gateway.url}/v1/hints`, { agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('information', () => {
        informational++;
      });
      req.on('error', reject);
    });

    assert.deepEqual(reply, { status: 200, body: 'final' });
    assert.equal(informational, 0);
  });

  test('the upstreamResponse hook gets route id, status and a duration', async (t) => {
    const upstream = http.createServer((_req, res) => {
      setTimeout(() => res.writeHead(404).end('missing'), 30);
    });
    const upstreamPort = await listen(t, upstream);
    const gateway = await startGateway(t, [
      route('hooks', '/v1/hooks', `http://127.0.0.1:${upstreamPort}`),
    ]);

    const reply = await send(`${gateway.url}/v1/hooks`);

    assert.equal(reply.status, 404);
    assert.equal(gateway.hookCalls.length, 1);
    const [call] = gateway.hookCalls;
    assert.equal(call?.hook, 'upstreamResponse');
    assert.equal(call?.routeId, 'hooks');
    assert.equal(call?.value, 404);
    assert.ok(call?.durationMs !== undefined && call.durationMs >= 25 && call.durationMs < 1000);
  });
});
