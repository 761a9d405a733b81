/**
 * The public listener over TLS (`server.tls`), as a client sees it: the token operation
 * and forwarding over TLS 1.3 and 1.2, the scheme upstreams and discovery documents are
 * told, `minVersion`, the `fapi` policy's suites, renegotiation refused, plain HTTP on
 * the TLS port, WebSocket upgrades (wss), and curl.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { WebSocket, WebSocketServer } from 'ws';
import { createTestPki, type TestPki } from '../helpers/certificates.js';
import { CLIENT_ID, CLIENT_SECRET, TOKEN_PATH } from '../helpers/fixture.js';
import { runToEnd, tempDir, testEnv } from '../helpers/process.js';
import { startTlsGateway } from '../helpers/tlsGateway.js';
import { parsedLogs, waitFor } from '../helpers/wait.js';

function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** A TLS connection to the gateway trusting `ca`; resolves once the handshake is done. */
function handshake(
  t: TestContext,
  url: string,
  ca: string,
  options: Record<string, unknown> = {},
): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: portOf(url), ca, ...options }, () =>
      resolve(socket),
    );
    t.after(() => socket.destroy());
    socket.once('error', reject);
  });
}

/** The handshake's failure (its error code), or a failure if it succeeded. */
async function refusedHandshake(
  t: TestContext,
  url: string,
  ca: string,
  options: Record<string, unknown>,
): Promise<string> {
  try {
    const socket = await handshake(t, url, ca, options);
    return assert.fail(`handshake succeeded with ${socket.getCipher().name}`);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? String(error);
  }
}

/** A pki whose server certificate has an RSA key (the FAPI TLS 1.2 suites are RSA). */
async function rsaServer(t: TestContext): Promise<TestPki> {
  const pki = await createTestPki(await tempDir(t, 'portaria-pki-'));
  return { ...pki, server: await pki.ca.issue('rsa-server', { use: 'server', keyType: 'rsa' }) };
}

describe('the public listener over TLS', () => {
  test('serves the token operation and forwards over TLS 1.3, telling the upstream the request came over https', async (t) => {
    const gw = await startTlsGateway(t);
    assert.match(gw.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const token = await gw.tlsToken();
    const res = await gw.fetch('/v1/orders/7', { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const forwarded = gw.upstream.received.at(-1);
    assert.equal(forwarded?.headers['x-forwarded-proto'], 'https');
    assert.match(String(forwarded?.headers.forwarded), /;proto=https$/);
    const socket = await handshake(t, gw.url, gw.pki.ca.pem);
    assert.equal(socket.getProtocol(), 'TLSv1.3');
  });

  test('a client that speaks TLS 1.2 at most is served over TLS 1.2 by default', async (t) => {
    const gw = await startTlsGateway(t);
    const socket = await handshake(t, gw.url, gw.pki.ca.pem, { maxVersion: 'TLSv1.2' });
    assert.equal(socket.getProtocol(), 'TLSv1.2');
    const agent = gw.agent(null, { maxVersion: 'TLSv1.2' });
    const res = await agent.request({
      origin: gw.url,
      path: TOKEN_PATH,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
    });
    assert.equal(res.statusCode, 200);
    await res.body.json();
  });

  test('minVersion TLSv1.3 refuses a TLS 1.2 client at the handshake', async (t) => {
    const gw = await startTlsGateway(t, { tls: { minVersion: 'TLSv1.3' } });
    const code = await refusedHandshake(t, gw.url, gw.pki.ca.pem, { maxVersion: 'TLSv1.2' });
    assert.match(code, /^ERR_SSL_/);
    const socket = await handshake(t, gw.url, gw.pki.ca.pem);
    assert.equal(socket.getProtocol(), 'TLSv1.3');
  });

  test('the fapi policy takes only the four FAPI 1.0 Advanced suites over TLS 1.2, and TLS 1.3', async (t) => {
    const pki = await rsaServer(t);
    const gw = await startTlsGateway(t, { pki, tls: { policy: 'fapi' } });
    for (const suite of [
      'ECDHE-RSA-AES128-GCM-SHA256',
      'ECDHE-RSA-AES256-GCM-SHA384',
      'DHE-RSA-AES128-GCM-SHA256',
      'DHE-RSA-AES256-GCM-SHA384',
    ]) {
      const socket = await handshake(t, gw.url, pki.ca.pem, {
        maxVersion: 'TLSv1.2',
        ciphers: suite,
      });
      assert.equal(socket.getCipher().name, suite);
    }
    for (const suite of [
      'ECDHE-RSA-AES128-SHA256',
      'ECDHE-RSA-CHACHA20-POLY1305',
      'AES128-GCM-SHA256',
    ]) {
      const code = await refusedHandshake(t, gw.url, pki.ca.pem, {
        maxVersion: 'TLSv1.2',
        ciphers: suite,
      });
      assert.match(code, /HANDSHAKE_FAILURE/, suite);
    }
    // The same refusal seen by another TLS stack than Node's.
    const sClient = await runToEnd(
      'openssl',
      [
        's_client',
        '-connect',
        `127.0.0.1:${portOf(gw.url)}`,
        '-tls1_2',
        '-cipher',
        'AES256-SHA256',
        '-CAfile',
        pki.ca.certFile,
      ],
      { env: testEnv(), timeoutMs: 10_000 },
    );
    assert.notEqual(sClient.code, 0);
    assert.match(sClient.stderr + sClient.stdout, /handshake failure|alert/i);
    const tls13 = await handshake(t, gw.url, pki.ca.pem);
    assert.equal(tls13.getProtocol(), 'TLSv1.3');
  });

  test('the default policy takes a TLS 1.2 suite the fapi policy refuses (the refusal above is the policy)', async (t) => {
    const pki = await rsaServer(t);
    const gw = await startTlsGateway(t, { pki });
    const socket = await handshake(t, gw.url, pki.ca.pem, {
      maxVersion: 'TLSv1.2',
      ciphers: 'ECDHE-RSA-AES128-SHA256',
    });
    assert.equal(socket.getCipher().name, 'ECDHE-RSA-AES128-SHA256');
  });

  test('a renegotiation is refused: the connection fails, the gateway logs it, and serves the next one', async (t) => {
    const gw = await startTlsGateway(t);
    const socket = await handshake(t, gw.url, gw.pki.ca.pem, { maxVersion: 'TLSv1.2' });
    const outcome = new Promise<string>((resolve) => {
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      socket.once('close', () => resolve('closed'));
      socket.renegotiate({}, (error) => resolve(error ? 'refused' : 'renegotiated'));
    });
    // OpenSSL's alert, or the close that follows it, whichever the client reads first.
    assert.match(await outcome, /^(ERR_SSL_NO_RENEGOTIATION|closed)$/);
    const line = await waitFor('the TLS error line', () =>
      parsedLogs(gw.logs).find((l) => l.msg === 'connection closed: TLS error'),
    );
    assert.match(String(line.reason), /^ERR_(SSL|TLS)_/);
    const next = await gw.fetch('/.well-known/jwks.json', {}, null);
    assert.equal(next.status, 200);
    await next.arrayBuffer();
  });

  test('plain HTTP on the TLS port is closed without an answer, and the listener carries on', async (t) => {
    const gw = await startTlsGateway(t);
    const socket = tcpConnect(portOf(gw.url), '127.0.0.1');
    t.after(() => socket.destroy());
    socket.on('error', () => {});
    await once(socket, 'connect');
    socket.write('GET /v1/orders HTTP/1.1\r\nHost: x\r\n\r\n');
    let received = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      received += chunk;
    });
    await once(socket, 'close');
    assert.doesNotMatch(received, /HTTP\/1\.1/);
    assert.equal(gw.upstream.received.length, 0);
    const res = await gw.fetch('/.well-known/jwks.json', {}, null);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  });

  test('a handshake that does not complete within server.headersTimeoutMs is cut', async (t) => {
    const gw = await startTlsGateway(t, {
      settings: () => ({ server: { headersTimeoutMs: 300 } }),
    });
    const socket = tcpConnect(portOf(gw.url), '127.0.0.1');
    t.after(() => socket.destroy());
    socket.on('error', () => {});
    await once(socket, 'connect');
    // The first bytes of a TLS record header, and nothing more.
    socket.write(Buffer.from([0x16, 0x03, 0x01]));
    const closed = once(socket, 'close').then(() => 'closed');
    const later = new Promise((resolve) => setTimeout(resolve, 5000, 'still open'));
    assert.equal(await Promise.race([closed, later]), 'closed');
  });

  test('the drain is not held by an idle TLS connection nor by one that never shook hands', async (t) => {
    const gw = await startTlsGateway(t);
    const idle = await handshake(t, gw.url, gw.pki.ca.pem);
    idle.on('error', () => {});
    idle.write('GET /.well-known/jwks.json HTTP/1.1\r\nHost: gw\r\n\r\n');
    await once(idle, 'data');
    const silent = tcpConnect(portOf(gw.url), '127.0.0.1');
    t.after(() => silent.destroy());
    silent.on('error', () => {});
    await once(silent, 'connect');
    await gw.app.shutdown();
    assert.equal(
      parsedLogs(gw.logs).find((l) => l.msg === 'grace period over: closing remaining connections'),
      undefined,
    );
    assert.ok(parsedLogs(gw.logs).some((l) => l.msg === 'stopped'));
  });

  test('with TLS on and no issuer set, the discovery documents name https: endpoints', async (t) => {
    const gw = await startTlsGateway(t, { settings: () => ({ issuer: undefined }) });
    assert.equal(gw.config.issuer, 'https://localhost:8080');
    const res = await gw.fetch('/.well-known/oauth-authorization-server', {}, null);
    const metadata = (await res.json()) as Record<string, unknown>;
    assert.equal(metadata.issuer, 'https://localhost:8080');
    assert.equal(metadata.token_endpoint, 'https://localhost:8080/oauth2/token');
  });

  test('a WebSocket upgrade over TLS (wss) is authenticated and tunnelled', async (t) => {
    const upstream = createServer();
    const wss = new WebSocketServer({ server: upstream });
    const seen: string[] = [];
    wss.on('connection', (ws, req) => {
      seen.push(String(req.headers['x-forwarded-proto']));
      ws.on('message', (data) => ws.send(`echo:${String(data)}`));
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    t.after(() => {
      for (const client of wss.clients) client.terminate();
      wss.close();
      upstream.closeAllConnections();
      return new Promise<void>((done) => upstream.close(() => done()));
    });
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;
    const gw = await startTlsGateway(t, {
      settings: () => ({
        routes: [
          { id: 'live', prefix: '/v1/live', upstream: upstreamUrl, scopes: ['orders:read'] },
        ],
        upstream: { default: null },
      }),
    });
    const token = await gw.tlsToken();
    const ws = new WebSocket(`${gw.url.replace('https:', 'wss:')}/v1/live/feed`, {
      ca: gw.pki.ca.pem,
      headers: { authorization: `Bearer ${token}` },
    });
    ws.on('error', () => {});
    t.after(() => ws.terminate());
    await once(ws, 'open');
    ws.send('hello');
    const [reply] = await once(ws, 'message');
    assert.equal(String(reply), 'echo:hello');
    assert.deepEqual(seen, ['https']);
    const refused = new WebSocket(`${gw.url.replace('https:', 'wss:')}/v1/live/feed`, {
      ca: gw.pki.ca.pem,
    });
    refused.on('error', () => {});
    t.after(() => refused.terminate());
    const [, response] = await once(refused, 'unexpected-response');
    assert.equal((response as { statusCode: number }).statusCode, 401);
  });

  test('curl gets a token and calls a route over TLS, trusting the CA', async (t) => {
    const gw = await startTlsGateway(t);
    const body = join(gw.dir, 'token-request.json');
    await writeFile(body, JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }));
    const token = await runToEnd(
      'curl',
      [
        '-sS',
        '--cacert',
        gw.pki.ca.certFile,
        '-H',
        'content-type: application/json',
        '--data-binary',
        `@${body}`,
        `${gw.url}${TOKEN_PATH}`,
      ],
      { env: testEnv(), timeoutMs: 10_000 },
    );
    assert.equal(token.code, 0, token.stderr);
    const accessToken = (JSON.parse(token.stdout) as Record<string, string>).token_de_acesso;
    const call = await runToEnd(
      'curl',
      [
        '-sS',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code} %{ssl_verify_result}',
        '--cacert',
        gw.pki.ca.certFile,
        '-H',
        `authorization: Bearer ${accessToken}`,
        `${gw.url}/v1/orders/1`,
      ],
      { env: testEnv(), timeoutMs: 10_000 },
    );
    assert.equal(call.stdout, '200 0', call.stderr);
    const untrusted = await runToEnd('curl', ['-sS', `${gw.url}/v1/orders/1`], {
      env: testEnv(),
      timeoutMs: 10_000,
    });
    assert.notEqual(untrusted.code, 0);
  });
});
