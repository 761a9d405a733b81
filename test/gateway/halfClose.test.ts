/**
 * A client that sends a complete request and then half-closes its connection (TCP FIN:
 * `printf … | nc -N`, some HTTP/1.0 clients, a balancer passing the FIN on) still gets
 * its answer: the request was received in full, and the upstream may act on it. Before,
 * Node's default aborted the request on the FIN: the upstream carried out a POST whose
 * client got no answer, and the access line said 499.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import { hashChosenSecret } from '../../src/clients/secretHash.js';
import { DEFAULT_CLIENTS, startGateway, TOKEN_PATH } from '../helpers/fixture.js';
import { ecKey, jwksOf, startJwksServer } from '../helpers/jwksServer.js';
import { parseResponses, type RawResponse } from '../helpers/rawResponse.js';
import { signWith } from '../helpers/tokens.js';
import { parsedLogs, waitFor } from '../helpers/wait.js';

/** Writes `payload`, half-closes, and returns everything received until the gateway closes. */
function sendThenHalfClose(url: string, payload: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.end(payload));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within 5 s; got ${Buffer.concat(chunks).toString('latin1')}`));
    }, 5000);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
  });
}

function only(raw: string): RawResponse {
  const responses = parseResponses(raw);
  assert.equal(responses.length, 1, raw);
  return responses[0] as RawResponse;
}

describe('a request followed by a half-close (server.halfClosedRequests: answer, the default)', () => {
  test('a GET is answered in full, then the connection closes; the access line says 200', async (t) => {
    const gw = await startGateway(t);
    // The upstream answers after the FIN has reached the gateway.
    gw.upstream.handler = (_req, res) => {
      setTimeout(() => res.end('{"slow":true}'), 100);
    };
    const token = await gw.token();
    const raw = await sendThenHalfClose(
      gw.url,
      `GET /v1/orders/42 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nX-Request-Id: half-close-1\r\n\r\n`,
    );
    const res = only(raw);
    assert.equal(res.status, 200);
    assert.equal(res.body, '{"slow":true}');
    const line = await waitFor('the access line', () =>
      parsedLogs(gw.logs).find((l) => l['portaria.request_id'] === 'half-close-1'),
    );
    assert.equal(line['http.response.status_code'], 200);
  });

  test('a POST the upstream carries out is answered, not dropped', async (t) => {
    const gw = await startGateway(t);
    gw.upstream.handler = (_req, res, body) => {
      setTimeout(() => {
        res.statusCode = 201;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ created: body.toString() }));
      }, 100);
    };
    const token = await gw.token();
    const raw = await sendThenHalfClose(
      gw.url,
      `POST /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 13\r\n\r\n{"amount":10}',
    );
    const res = only(raw);
    assert.equal(res.status, 201);
    assert.deepEqual(JSON.parse(res.body), { created: '{"amount":10}' });
    assert.equal(gw.upstream.received.length, 1);
  });

  test('the token operation answers a half-closed request (a slow scrypt secret check)', async (t) => {
    const secret = 'chosen-secret-for-half-close';
    const gw = await startGateway(t, {
      clients: [
        ...DEFAULT_CLIENTS,
        { id: 'slow', secret, scopes: ['orders:read'], hash: await hashChosenSecret(secret) },
      ],
    });
    const body = JSON.stringify({ clientId: 'slow', clientSecret: secret });
    const raw = await sendThenHalfClose(
      gw.url,
      `POST ${TOKEN_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    const res = only(raw);
    assert.equal(res.status, 200);
    assert.equal(
      typeof (JSON.parse(res.body) as { token_de_acesso?: unknown }).token_de_acesso,
      'string',
    );
  });

  test('two pipelined requests are both answered, in order, before the close', async (t) => {
    const gw = await startGateway(t);
    gw.upstream.handler = (req, res) => {
      setTimeout(() => res.end(JSON.stringify({ path: req.url })), 50);
    };
    const token = await gw.token();
    const request = (path: string) =>
      `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`;
    const raw = await sendThenHalfClose(gw.url, request('/v1/orders/1') + request('/v1/orders/2'));
    const responses = parseResponses(raw);
    assert.deepEqual(
      responses.map((r) => [r.status, JSON.parse(r.body).path]),
      [
        [200, '/v1/orders/1'],
        [200, '/v1/orders/2'],
      ],
    );
  });

  test('a request whose body was cut by the half-close is refused, and nothing is forwarded', async (t) => {
    const gw = await startGateway(t);
    const token = await gw.token();
    const raw = await sendThenHalfClose(
      gw.url,
      `POST /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"amount"',
    );
    // Whatever the gateway managed to say, the upstream never got a truncated body.
    if (raw !== '') assert.notEqual(only(raw).status, 200);
    assert.equal(
      gw.upstream.received.filter((r) => r.body.length === 100).length,
      0,
      'no complete body was forwarded',
    );
  });
});

/** A gateway that takes a client's FIN for the client leaving. */
function abortingGateway(t: TestContext) {
  return startGateway(t, {
    settings: () => ({
      server: { host: '127.0.0.1', port: 0, shutdownGraceMs: 2000, halfClosedRequests: 'abort' },
    }),
  });
}

describe('server.halfClosedRequests: abort', () => {
  test('the FIN counts as the client leaving: no answer, the upstream request is cancelled, 499', async (t) => {
    const gw = await abortingGateway(t);
    let upstreamSawClose = false;
    const slow: typeof gw.upstream.handler = (_req, res) => {
      res.on('close', () => {
        upstreamSawClose = !res.writableFinished;
      });
      setTimeout(() => {
        if (!res.destroyed) res.end('{"late":true}');
      }, 300);
    };
    const token = await gw.token();
    // A first request puts the token in the verified-token cache: the next one is
    // forwarded before the FIN is read.
    gw.upstream.handler = (_req, res) => res.end('{}');
    const warm = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(warm.status, 200);
    gw.upstream.handler = slow;
    const raw = await sendThenHalfClose(
      gw.url,
      `GET /v1/orders/42 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nX-Request-Id: half-close-abort\r\n\r\n`,
    );
    assert.equal(raw, '');
    const line = await waitFor('the access line', () =>
      parsedLogs(gw.logs).find((l) => l['portaria.request_id'] === 'half-close-abort'),
    );
    assert.equal(line['http.response.status_code'], 499);
    await waitFor('the upstream request cancelled', () => (upstreamSawClose ? true : undefined));
  });

  test('the admin listener answers a half-closed request either way', async (t) => {
    const gw = await abortingGateway(t);
    const raw = await sendThenHalfClose(gw.adminUrl, 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n');
    const res = only(raw);
    assert.equal(res.status, 200);
    assert.match(res.body, /portaria_http_requests_total/);
  });

  const goneEarly: [string, string][] = [
    [
      'a GET',
      'GET /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer TOKEN\r\nX-Request-Id: gone-early\r\n\r\n',
    ],
    [
      'a POST',
      'POST /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer TOKEN\r\n' +
        'Content-Type: application/json\r\nContent-Length: 2\r\nX-Request-Id: gone-early\r\n\r\n{}',
    ],
  ];
  for (const [what, request] of goneEarly) {
    test(`${what} whose client left while its token was verified is never forwarded (and the stop does not hang)`, async (t) => {
      // A verification that waits for I/O: a trusted issuer's token whose key is not known
      // yet, so its key set is fetched (slowly) and the FIN sent with the request is read
      // before the verification ends. (Our own tokens are verified without a tick.)
      const known = ecKey('known');
      const fresh = ecKey('fresh');
      const jwks = await startJwksServer(t, (_req, res, n) => {
        const body = JSON.stringify(n === 1 ? jwksOf(known) : jwksOf(known, fresh));
        const send = () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(body);
        };
        if (n === 1) send();
        else jwks.later(300, send);
      });
      const gw = await startGateway(t, {
        settings: () => ({
          server: {
            host: '127.0.0.1',
            port: 0,
            shutdownGraceMs: 2000,
            halfClosedRequests: 'abort',
          },
          issuers: [
            {
              id: 'partner',
              issuer: 'https://idp.partner.test',
              audiences: ['partner-api'],
              jwksUri: `${jwks.url}/jwks`,
              cooldownSeconds: 1,
            },
          ],
        }),
      });
      const now = Math.floor(Date.now() / 1000);
      const token = await signWith(
        fresh.privateKey,
        'ES256',
        {
          iss: 'https://idp.partner.test',
          aud: 'partner-api',
          sub: 'acme',
          client_id: 'acme',
          jti: 'gone-early-token',
          scope: 'orders:read',
          iat: now,
          nbf: now,
          exp: now + 600,
        },
        { kid: 'fresh' },
      );
      // Past the start-up fetch's cooldown, so the unknown kid triggers a fetch.
      await new Promise((resolve) => setTimeout(resolve, 1200));
      const raw = await sendThenHalfClose(gw.url, request.replace('TOKEN', token));
      assert.equal(raw, '');
      const line = await waitFor('the access line', () =>
        parsedLogs(gw.logs).find((l) => l['portaria.request_id'] === 'gone-early'),
      );
      assert.equal(line['http.response.status_code'], 499);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.deepEqual(gw.upstream.received, [], 'the upstream never saw the request');
      // The token itself is good: sent again by a client that stays, it is forwarded.
      const stays = await fetch(`${gw.url}/v1/orders`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(stays.status, 200);
      gw.upstream.received.length = 0;
      // Before the fix the forwarded exchange, with no client to write to, paused for
      // ever and the stop waited on it.
      const stopped = await Promise.race([
        gw.app.shutdown().then(() => 'stopped'),
        new Promise((resolve) => setTimeout(resolve, 4000, 'hung')),
      ]);
      assert.equal(stopped, 'stopped');
    });
  }
});
