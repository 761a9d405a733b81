/**
 * HTTP/1.1 framing attacks against a real gateway, over raw TCP: ambiguous message length
 * (RFC 9112 §6.3, request smuggling), malformed fields, oversized headers, slow clients,
 * refusals that leave an unread body on the connection, and pipelining. In every refused
 * case nothing reaches the upstream and the gateway keeps serving.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import { type Gateway, startGateway } from '../helpers/fixture.js';
import { rawRequest } from '../helpers/rawHttp.js';
import {
  headerOf,
  onlyResponse,
  parseResponses,
  type RawResponse,
  rawProblemOf,
} from '../helpers/rawResponse.js';
import { accessLineOf, parsedLogs, waitFor } from '../helpers/wait.js';

const HEADERS_TIMEOUT_MS = 500;
const MAX_HEADER_BYTES = 2048;

async function framingGateway(t: TestContext) {
  const gw = await startGateway(t, {
    settings: () => ({
      server: {
        host: '127.0.0.1',
        port: 0,
        headersTimeoutMs: HEADERS_TIMEOUT_MS,
        requestTimeoutMs: 1000,
        keepAliveTimeoutMs: 1000,
        maxHeaderBytes: MAX_HEADER_BYTES,
        shutdownGraceMs: 500,
      },
    }),
  });
  return { gw, token: await gw.token() };
}

/** The parser-level refusal: problem details, `Connection: close`, `#unparsed` instance. */
function assertParserRefusal(res: RawResponse, status: number, code: string) {
  assert.equal(res.status, status);
  assert.equal(headerOf(res, 'connection'), 'close');
  const problem = rawProblemOf(res);
  assert.equal(problem.tipo, `urn:portaria:problem:${code}`);
  assert.equal(problem.status, status);
  assert.equal(problem.instancia, '#unparsed');
  assert.equal(typeof problem.detalhe, 'string');
  return problem;
}

/** The private reason of the latest parser refusal in the log. */
function parserReasons(gw: Gateway): Promise<string[]> {
  return waitFor('a parser refusal log line', () => {
    const reasons = parsedLogs(gw.logs)
      .filter((l) => l.msg === 'request refused by the HTTP parser')
      .map((l) => l.reason as string);
    return reasons.length > 0 ? reasons : undefined;
  });
}

/** The gateway still answers a well-formed request afterwards. */
async function assertStillServing(gw: Gateway, token: string) {
  const res = await fetch(`${gw.url}/v1/orders/after`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  assert.deepEqual(
    gw.upstream.received.map((r) => r.url),
    ['/v1/orders/after'],
  );
}

/**
 * Sends `first`, waits for its whole response (one JSON body), then sends `second` on the
 * same connection; returns everything received until the server closes (or 3 s).
 */
function afterOneResponse(url: string, first: string, second: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let received = '';
    let sentSecond = false;
    const timer = setTimeout(() => socket.destroy(), 3000);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (!sentSecond && parseResponses(received).length === 1 && received.endsWith('}')) {
        sentSecond = true;
        socket.write(second);
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.on('error', (error) => (received === '' ? reject(error) : undefined));
    socket.write(first);
  });
}

const SMUGGLED = (token: string) =>
  `GET /v1/orders/smuggled HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`;

describe('ambiguous message length', () => {
  /** [name, framing header lines]: both length mechanisms at once. */
  const both: [string, string][] = [
    ['Content-Length then Transfer-Encoding', 'Content-Length: 5\r\nTransfer-Encoding: chunked'],
    ['Transfer-Encoding then Content-Length', 'Transfer-Encoding: chunked\r\nContent-Length: 5'],
  ];
  for (const [name, framing] of both) {
    test(`${name} → 400 invalid-request naming both, Connection: close, nothing forwarded`, async (t) => {
      const { gw, token } = await framingGateway(t);
      const raw = await rawRequest(
        gw.url,
        `POST /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n${framing}\r\n\r\n0\r\n\r\n${SMUGGLED(token)}`,
      );
      const problem = assertParserRefusal(onlyResponse(raw), 400, 'invalid-request');
      assert.equal(problem.detalhe, 'Content-Length and Transfer-Encoding must not both be sent.');
      assert.deepEqual(await parserReasons(gw), ['cl-and-te']);
      assert.equal(gw.upstream.received.length, 0);
      await assertStillServing(gw, token);
    });
  }

  test('two different Content-Length values → 400 invalid-request that does not blame Transfer-Encoding', async (t) => {
    const { gw, token } = await framingGateway(t);
    const raw = await rawRequest(
      gw.url,
      `POST /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef`,
    );
    const problem = assertParserRefusal(onlyResponse(raw), 400, 'invalid-request');
    assert.doesNotMatch(problem.detalhe as string, /Transfer-Encoding/);
    const [reason] = await parserReasons(gw);
    assert.notEqual(reason, 'cl-and-te');
    assert.equal(gw.upstream.received.length, 0);
  });

  /** [name, raw header lines]: malformed fields the parser refuses. */
  const malformed: [string, string][] = [
    ['an obs-fold continuation line', 'X-Folded: a\r\n  b'],
    ['a control character in a value', 'X-Ctl: a\x01b'],
    ['a space inside a field name', 'Bad Name: a'],
    ['a space before the colon', 'X-Space : a'],
    ['a Transfer-Encoding other than chunked last', 'Transfer-Encoding: chunked, identity'],
    ['a non-numeric Content-Length', 'Content-Length: 5a'],
  ];
  for (const [name, line] of malformed) {
    test(`${name} → 400 invalid-request, Connection: close, nothing forwarded`, async (t) => {
      const { gw, token } = await framingGateway(t);
      const raw = await rawRequest(
        gw.url,
        `POST /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n${line}\r\n\r\n0\r\n\r\n`,
      );
      assertParserRefusal(onlyResponse(raw), 400, 'invalid-request');
      assert.equal(gw.upstream.received.length, 0);
      await assertStillServing(gw, token);
    });
  }
});

describe('request line and header limits', () => {
  test('an HTTP/1.0 request is served and its connection closed', async (t) => {
    const { gw, token } = await framingGateway(t);
    const raw = await rawRequest(
      gw.url,
      `GET /v1/orders/10 HTTP/1.0\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    );
    const res = onlyResponse(raw);
    assert.equal(res.status, 200);
    assert.equal(headerOf(res, 'connection')?.toLowerCase(), 'close');
    assert.deepEqual(JSON.parse(res.body), { path: '/v1/orders/10', method: 'GET' });
    assert.equal(gw.upstream.received[0]?.headers['x-client-id'], 'acme');
  });

  test('two Host lines → 400 invalid-request, connection closed, nothing forwarded (RFC 9112 §3.2)', async (t) => {
    const { gw, token } = await framingGateway(t);
    for (const path of [
      '/v1/orders/1',
      '/v1/authentication/accesstoken',
      '/.well-known/jwks.json',
    ]) {
      const raw = await rawRequest(
        gw.url,
        `GET ${path} HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nAuthorization: Bearer ${token}\r\n\r\n`,
      );
      const res = onlyResponse(raw);
      assert.equal(res.status, 400, path);
      assert.equal(headerOf(res, 'connection'), 'close');
      const problem = rawProblemOf(res);
      assert.equal(problem.tipo, 'urn:portaria:problem:invalid-request');
      assert.equal(problem.detalhe, 'Send exactly one Host header.');
      const requestId = headerOf(res, 'x-request-id') as string;
      const line = await waitFor('the access line', () =>
        parsedLogs(gw.logs).find((l) => l['portaria.request_id'] === requestId),
      );
      assert.equal(line['portaria.reason'], 'multiple-host');
    }
    await assertStillServing(gw, token);
  });

  test('a Host that is not a host and port → 400 invalid-request, connection closed, nothing forwarded', async (t) => {
    const { gw, token } = await framingGateway(t);
    for (const host of [
      'a, evil.example',
      'a b',
      'evil.example@a',
      'x/../y',
      '[::1',
      'a:80:80',
      '',
    ]) {
      const raw = await rawRequest(
        gw.url,
        `GET /v1/orders/1 HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\n\r\n`,
      );
      const res = onlyResponse(raw);
      assert.equal(res.status, 400, JSON.stringify(host));
      assert.equal(headerOf(res, 'connection'), 'close');
      assert.equal(rawProblemOf(res).detalhe, 'The Host header is not a valid host and port.');
    }
    assert.equal(gw.upstream.received.length, 0);
    for (const host of [
      'api.example.com',
      'api.example.com:8443',
      '127.0.0.1:80',
      '[::1]:8080',
      'x',
    ]) {
      const res = onlyResponse(
        await rawRequest(
          gw.url,
          `GET /v1/orders/1 HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
        ),
      );
      assert.equal(res.status, 200, host);
    }
    assert.deepEqual(
      gw.upstream.received.map((r) => r.headers['x-forwarded-host']),
      ['api.example.com', 'api.example.com:8443', '127.0.0.1:80', '[::1]:8080', 'x'],
    );
  });

  test('two Content-Type lines → 400 invalid-request on the token operation and on forwarded paths', async (t) => {
    const { gw, token } = await framingGateway(t);
    const body = '{"clientId":"acme","clientSecret":"x"}';
    for (const path of ['/v1/authentication/accesstoken', '/v1/orders/1']) {
      const res = onlyResponse(
        await rawRequest(
          gw.url,
          `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        ),
      );
      assert.equal(res.status, 400, path);
      assert.equal(rawProblemOf(res).detalhe, 'Send at most one Content-Type header.');
    }
    assert.equal(gw.upstream.received.length, 0);
  });

  test('a token request offering a WebSocket upgrade → 400, not a 405 that allows POST', async (t) => {
    const { gw } = await framingGateway(t);
    const body = '{"clientId":"acme","clientSecret":"x"}';
    const res = onlyResponse(
      await rawRequest(
        gw.url,
        `POST /v1/authentication/accesstoken HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      ),
    );
    assert.equal(res.status, 400);
    assert.equal(headerOf(res, 'allow'), undefined);
    assert.equal(
      rawProblemOf(res).detalhe,
      'This path does not accept upgrades; send the request without Upgrade.',
    );
  });

  test('an HTTP/1.0 request with Transfer-Encoding → 400 and the connection closes (RFC 9112 §6.1)', async (t) => {
    const { gw, token } = await framingGateway(t);
    const raw = await rawRequest(
      gw.url,
      `POST /v1/orders HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nAuthorization: Bearer ${token}\r\n\r\n0\r\n\r\n` +
        `GET /v1/orders/2 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    );
    const res = onlyResponse(raw);
    assert.equal(res.status, 400);
    assert.equal(headerOf(res, 'connection'), 'close');
    assert.equal(rawProblemOf(res).detalhe, 'An HTTP/1.0 request must not use Transfer-Encoding.');
    assert.equal(gw.upstream.received.length, 0);
    await assertStillServing(gw, token);
  });

  test('an HTTP/1.1 request without Host → 400 invalid-request problem details; HTTP/1.0 needs none', async (t) => {
    const { gw, token } = await framingGateway(t);
    const raw = await rawRequest(
      gw.url,
      `GET /v1/orders/1 HTTP/1.1\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    );
    const res = onlyResponse(raw);
    assert.equal(res.status, 400);
    assert.equal(headerOf(res, 'connection'), 'close');
    assert.equal(rawProblemOf(res).detalhe, 'An HTTP/1.1 request must carry a Host header.');
    await assertStillServing(gw, token);
  });

  test('a WebSocket upgrade with two Host lines is refused before it is authenticated or proxied', async (t) => {
    const { gw, token } = await framingGateway(t);
    const raw = await rawRequest(
      gw.url,
      `GET /v1/orders/ws HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nAuthorization: Bearer ${token}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
    );
    const res = onlyResponse(raw);
    assert.equal(res.status, 400);
    assert.equal(rawProblemOf(res).tipo, 'urn:portaria:problem:invalid-request');
    assert.equal(gw.upstream.received.length, 0);
  });

  test('an expectation other than 100-continue is ignored: the request is handled as any other', async (t) => {
    const { gw, token } = await framingGateway(t);
    const ok = onlyResponse(
      await rawRequest(
        gw.url,
        `GET /v1/orders/5 HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
      ),
    );
    assert.equal(ok.status, 200);
    assert.equal(gw.upstream.received[0]?.headers.expect, undefined, 'Expect is not forwarded');
    const refused = onlyResponse(
      await rawRequest(
        gw.url,
        'GET /v1/orders/5 HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nConnection: close\r\n\r\n',
      ),
    );
    assert.equal(refused.status, 401);
    assert.equal(rawProblemOf(refused).tipo, 'urn:portaria:problem:token-missing');
    assert.ok(headerOf(refused, 'x-request-id'));
  });

  test('CONNECT → 405 method-not-allowed problem details, nothing forwarded', async (t) => {
    const { gw, token } = await framingGateway(t);
    const res = onlyResponse(
      await rawRequest(gw.url, 'CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n'),
    );
    assert.equal(res.status, 405);
    assert.equal(headerOf(res, 'connection'), 'close');
    assert.ok(headerOf(res, 'allow'));
    assert.equal(headerOf(res, 'x-content-type-options'), 'nosniff');
    assert.equal(rawProblemOf(res).tipo, 'urn:portaria:problem:method-not-allowed');
    // An access line like any request's, with the request id the response carries.
    const requestId = headerOf(res, 'x-request-id') as string;
    const line = await waitFor('the access line', () =>
      parsedLogs(gw.logs).find(
        (l) => l['portaria.request_id'] === requestId && l.msg === 'request',
      ),
    );
    assert.equal(line['http.request.method'], 'CONNECT');
    assert.equal(line['http.response.status_code'], 405);
    assert.equal(line['portaria.reason'], 'connect');
    await assertStillServing(gw, token);
  });

  test('headers over server.maxHeaderBytes → 431 headers-too-large, nothing forwarded', async (t) => {
    const { gw, token } = await framingGateway(t);
    const raw = await rawRequest(
      gw.url,
      `GET /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nX-Big: ${'a'.repeat(MAX_HEADER_BYTES * 2)}\r\n\r\n`,
    );
    assertParserRefusal(onlyResponse(raw), 431, 'headers-too-large');
    assert.deepEqual(await parserReasons(gw), ['header-overflow']);
    assert.equal(gw.upstream.received.length, 0);
    await assertStillServing(gw, token);
  });

  test('a client that stops halfway through its headers gets 408 within headersTimeoutMs + 1 s', async (t) => {
    const { gw, token } = await framingGateway(t);
    const started = performance.now();
    const raw = await rawRequest(
      gw.url,
      `GET /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n`,
      HEADERS_TIMEOUT_MS + 1000,
    );
    const elapsed = performance.now() - started;
    assert.notEqual(raw, '', `no answer within ${Math.round(elapsed)} ms`);
    assertParserRefusal(onlyResponse(raw), 408, 'request-timeout');
    assert.ok(elapsed >= HEADERS_TIMEOUT_MS - 50, `answered after ${elapsed} ms`);
    assert.deepEqual(await parserReasons(gw), ['request-timeout']);
    assert.equal(gw.upstream.received.length, 0);
    await assertStillServing(gw, token);
  });
});

describe('a request body slower than server.requestTimeoutMs', () => {
  for (const [path, route] of [
    ['/v1/orders', 'default'],
    ['/v1/authentication/accesstoken', 'token'],
  ] as const) {
    test(`on ${route}: 408 problem details, and the access line says 408, not 499`, async (t) => {
      const { gw, token } = await framingGateway(t);
      const { hostname, port } = new URL(gw.url);
      const socket = connect({ host: hostname, port: Number(port) });
      t.after(() => socket.destroy());
      socket.on('error', () => {});
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
      });
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
          'Content-Type: application/json\r\nX-Request-Id: slow-upload-1\r\nContent-Length: 100\r\n\r\n{',
      );
      // One byte every 200 ms: never idle long, but never done within requestTimeoutMs (1 s).
      const drip = setInterval(() => socket.write(' '), 200);
      t.after(() => clearInterval(drip));
      await waitFor('the 408', () => (received.includes('\r\n\r\n{') ? true : undefined), 4000);
      clearInterval(drip);
      const res = onlyResponse(received);
      assert.equal(res.status, 408);
      assert.equal(headerOf(res, 'connection'), 'close');
      const problem = rawProblemOf(res);
      assert.equal(problem.tipo, 'urn:portaria:problem:request-timeout');
      // The request was parsed: its answer names its path and id, as every answer does.
      assert.equal(problem.instancia, `${path}#slow-upload-1`);
      assert.equal(headerOf(res, 'x-request-id'), 'slow-upload-1');
      const line = await waitFor('the access line', () =>
        parsedLogs(gw.logs).find(
          (l) => l['portaria.request_id'] === 'slow-upload-1' && l['http.route'] === route,
        ),
      );
      assert.equal(line['http.response.status_code'], 408);
      assert.equal(line['portaria.reason'], 'request-timeout');
    });
  }
});

describe('refusals and what follows them on the connection', () => {
  test('on a keep-alive connection that already carried a response, refusals still get problem details', async (t) => {
    const { gw, token } = await framingGateway(t);
    const jwks = 'GET /.well-known/jwks.json HTTP/1.1\r\nHost: x\r\n\r\n';
    const cases: [string, string, number, string][] = [
      [
        'Content-Length with Transfer-Encoding',
        'POST /v1/orders HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
        400,
        'invalid-request',
      ],
      [
        'headers too large',
        `GET /v1/orders HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(MAX_HEADER_BYTES)}\r\n\r\n`,
        431,
        'headers-too-large',
      ],
      [
        'a WebSocket upgrade without a token',
        'GET /v1/orders/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
        401,
        'token-missing',
      ],
    ];
    for (const [name, second, status, code] of cases) {
      const responses = parseResponses(await afterOneResponse(gw.url, jwks, second));
      assert.equal(responses.length, 2, name);
      assert.equal(responses[0]?.status, 200, name);
      const refusal = responses[1] as RawResponse;
      assert.equal(refusal.status, status, name);
      assert.equal(rawProblemOf(refusal).tipo, `urn:portaria:problem:${code}`, name);
    }
    await assertStillServing(gw, token);
  });

  test('a POST refused with 401 before its body was read gets Connection: close and the socket ends', async (t) => {
    const { gw, token } = await framingGateway(t);
    const started = performance.now();
    const raw = await rawRequest(
      gw.url,
      'POST /v1/orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"partial":',
      3000,
    );
    const res = onlyResponse(raw);
    assert.equal(res.status, 401);
    assert.equal(headerOf(res, 'connection'), 'close');
    assert.equal(rawProblemOf(res).tipo, 'urn:portaria:problem:token-missing');
    assert.ok(performance.now() - started < 2000, 'the gateway closed the connection');
    assert.equal(gw.upstream.received.length, 0);
    await assertStillServing(gw, token);
  });

  test('a GET without a body refused with 401 keeps its keep-alive connection (nothing left unread)', async (t) => {
    const { gw } = await framingGateway(t);
    const res = await fetch(`${gw.url}/v1/orders`);
    assert.equal(res.status, 401);
    await res.arrayBuffer();
    assert.equal(res.headers.get('connection'), 'keep-alive');
  });

  test('a request hidden in the unread body of a refused POST never reaches the upstream', async (t) => {
    const { gw, token } = await framingGateway(t);
    const hidden = SMUGGLED(token);
    const raw = await rawRequest(
      gw.url,
      `POST /v1/orders HTTP/1.1\r\nHost: x\r\nContent-Length: ${hidden.length + 50}\r\n\r\n${hidden}`,
      3000,
    );
    const responses = parseResponses(raw);
    assert.deepEqual(
      responses.map((r) => r.status),
      [401],
    );
    assert.equal(headerOf(responses[0] as RawResponse, 'connection'), 'close');
    assert.equal(gw.upstream.received.length, 0);
  });

  test('a pipelined request after a refused one is answered on its own, with its own identity', async (t) => {
    const { gw, token } = await framingGateway(t);
    const raw = await rawRequest(
      gw.url,
      'GET /v1/orders/refused HTTP/1.1\r\nHost: x\r\nX-Client-Id: acme\r\n\r\n' +
        `GET /v1/orders/second HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
      3000,
    );
    const responses = parseResponses(raw);
    assert.deepEqual(
      responses.map((r) => r.status),
      [401, 200],
    );
    assert.deepEqual(
      gw.upstream.received.map((r) => [r.url, r.headers['x-client-id']]),
      [['/v1/orders/second', 'acme']],
    );
  });

  test('pipelined requests are forwarded one after the other and answered in order', async (t) => {
    const { gw, token } = await framingGateway(t);
    const raw = await rawRequest(
      gw.url,
      ['first', 'second', 'third']
        .map(
          (name, i) =>
            `GET /v1/orders/${name} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n${i === 2 ? 'Connection: close\r\n' : ''}\r\n`,
        )
        .join(''),
      3000,
    );
    // (The upstream answers chunked: count the status lines.)
    assert.equal(raw.match(/^HTTP\/1\.1 200 OK\r$/gm)?.length, 3, raw);
    assert.deepEqual(
      gw.upstream.received.map((r) => r.url),
      ['/v1/orders/first', '/v1/orders/second', '/v1/orders/third'],
    );
  });

  test('a request pipelined after a refusal that closes the connection is never forwarded', async (t) => {
    const { gw, token } = await framingGateway(t);
    const raw = await rawRequest(
      gw.url,
      `GET /v1/orders/1 HTTP/1.1\r\nHost: a, evil.example\r\nAuthorization: Bearer ${token}\r\n\r\n` +
        `DELETE /v1/orders/2 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`,
      3000,
    );
    const responses = parseResponses(raw);
    assert.deepEqual(
      responses.map((r) => r.status),
      [400],
    );
    assert.equal(headerOf(responses[0] as RawResponse, 'connection'), 'close');
    await assertStillServing(gw, token);
    assert.deepEqual(
      gw.upstream.received.map((r) => r.url),
      ['/v1/orders/after'],
    );
  });

  test('a pipelined request after a 400 invalid-path is not forwarded when it is itself unauthenticated', async (t) => {
    const { gw } = await framingGateway(t);
    const raw = await rawRequest(
      gw.url,
      'GET /v1/../admin HTTP/1.1\r\nHost: x\r\n\r\n' +
        'GET /v1/orders/next HTTP/1.1\r\nHost: x\r\nX-Client-Id: acme\r\nConnection: close\r\n\r\n',
      3000,
    );
    assert.deepEqual(
      parseResponses(raw).map((r) => r.status),
      [400, 401],
    );
    assert.equal(gw.upstream.received.length, 0);
  });
});

describe('bytes after a complete request', () => {
  // The upstream carried the request out: its answer is the client's, whatever follows.
  const cases: ReadonlyArray<[string, string, string]> = [
    ['HTTP/1.1 with Connection: close', 'HTTP/1.1', 'Connection: close\r\n'],
    ['HTTP/1.0 without keep-alive', 'HTTP/1.0', ''],
    ['HTTP/1.1 keep-alive, then bytes that are no request', 'HTTP/1.1', ''],
  ];
  for (const [name, version, connection] of cases) {
    test(`${name}: one more byte than announced → the upstream's answer, then the connection closes`, async (t) => {
      const { gw, token } = await framingGateway(t);
      const stray = connection === '' && version === 'HTTP/1.1' ? 'X\r\n\r\n' : 'X';
      const raw = await rawRequest(
        gw.url,
        `POST /v1/transfer ${version}\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n${connection}` +
          `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 9\r\n\r\namount=10${stray}`,
        3000,
      );
      const answer = onlyResponse(raw);
      assert.equal(answer.status, 200, raw.slice(0, 300));
      assert.equal(headerOf(answer, 'x-upstream'), 'yes', 'the upstream’s own answer');
      assert.equal(headerOf(answer, 'connection'), 'close');
      assert.deepEqual(
        gw.upstream.received.map((r) => [r.method, r.url, r.body.toString()]),
        [['POST', '/v1/transfer', 'amount=10']],
      );
      const line = await waitFor('the stray-bytes line', () =>
        parsedLogs(gw.logs).find((l) => l.msg === 'bytes after the request ignored'),
      );
      assert.equal(line['portaria.request_id'], headerOf(answer, 'x-request-id'));
      assert.equal(line.bytes, stray.length);
      assert.doesNotMatch(JSON.stringify(line), /amount/, 'a count, never the bytes');
    });
  }

  test('the access line keeps the upstream’s status', async (t) => {
    const { gw, token } = await framingGateway(t);
    const raw = await rawRequest(
      gw.url,
      `POST /v1/transfer HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        'Connection: close\r\nContent-Length: 9\r\n\r\namount=10X',
      3000,
    );
    const reqId = headerOf(onlyResponse(raw), 'x-request-id') as string;
    const line = await accessLineOf(gw.logs, reqId);
    assert.equal(line['http.response.status_code'], 200);
  });
});
