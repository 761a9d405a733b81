/**
 * Behind a real nginx terminating mutual TLS, configured by the shipped
 * docs/examples/nginx-mtls.conf (rendered with this test's port, certificates and
 * gateway): the partner's certificate reaches the gateway (observed in the access line,
 * `tls.client.hash.sha256`), the header never reaches the upstream, a header a client
 * sends straight to the gateway is no certificate, and one a client sends through nginx
 * is replaced by nginx's own.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import {
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { decodeJwt } from 'jose';
import {
  type CertificateFile,
  type CertificateFiles,
  makeCertificateFiles,
} from '../helpers/certificateFiles.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type Gateway,
  type ReceivedRequest,
  startGateway,
} from '../helpers/fixture.js';
import { type NginxServer, startNginx } from '../helpers/nginxServer.js';
import { parseResponses } from '../helpers/rawResponse.js';
import { accessLineOf, parsedLogs, waitFor } from '../helpers/wait.js';

/** From dist-test/test/e2e/ up to the repository. */
const EXAMPLE = fileURLToPath(new URL('../../../docs/examples/nginx-mtls.conf', import.meta.url));

let dir: string;
let files: CertificateFiles;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'portaria-nginx-'));
  files = await makeCertificateFiles(dir);
});
after(() => rm(dir, { recursive: true, force: true }));

/** `text` with `from` replaced by `to`, which must occur exactly once. */
function replaceOnce(text: string, from: string, to: string): string {
  assert.equal(text.split(from).length, 2, `the example has "${from}" once`);
  return text.replace(from, to);
}

/** The shipped example, with this test's listener, certificates and gateway. */
function rendered(example: string, port: number, gateway: Gateway): string {
  let text = replaceOnce(example, 'listen 443 ssl;', `listen 127.0.0.1:${port} ssl;`);
  text = replaceOnce(text, '/etc/nginx/tls/server.crt', files.server.cert);
  text = replaceOnce(text, '/etc/nginx/tls/server.key', files.server.key);
  text = replaceOnce(text, '/etc/nginx/tls/partners-ca.crt', files.ca.cert);
  return replaceOnce(text, 'server 127.0.0.1:8080;', `server ${new URL(gateway.url).host};`);
}

interface Setup {
  readonly gw: Gateway;
  readonly nginx: NginxServer;
  readonly token: string;
}

async function behindNginx(t: TestContext): Promise<Setup> {
  // Stopped before the gateway drains (hooks run in order), or its idle upstream
  // connections would hold the drain.
  let nginx: NginxServer | undefined;
  t.after(() => nginx?.stop());
  const gw = await startGateway(t, {
    settings: () => ({
      // nginx connects from 127.0.0.1; the tests' direct requests come from 127.0.0.3.
      server: { trustedProxies: ['127.0.0.1'] },
      clientCertificate: {
        source: 'header',
        caFiles: [files.ca.cert],
        header: { format: 'nginx' },
      },
    }),
  });
  const example = await readFile(EXAMPLE, 'utf8');
  nginx = await startNginx(t, {
    dir: await mkdtemp(join(dir, 'run-')),
    http: (port) => rendered(example, port, gw),
  });
  return { gw, nginx, token: await gw.token() };
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

function collect(res: IncomingMessage, resolve: (answer: Answer) => void): void {
  let body = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    body += chunk;
  });
  res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
}

/** An HTTPS request through nginx, presenting `certificate` (null: none). */
async function throughNginx(
  nginx: NginxServer,
  certificate: CertificateFile | null,
  headers: OutgoingHttpHeaders,
  request: { method?: string; path?: string; body?: string } = {},
): Promise<Answer> {
  const key = certificate === null ? null : await readFile(certificate.key, 'utf8');
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: nginx.port,
        method: request.method ?? 'GET',
        path: request.path ?? '/v1/orders/1',
        headers,
        ca: files.ca.pem,
        ...(certificate === null || key === null ? {} : { cert: certificate.pem, key }),
        agent: false,
      },
      (res) => collect(res, resolve),
    );
    req.on('error', reject);
    req.end(request.body);
  });
}

/** A plain request straight to the gateway from 127.0.0.3 (not a trusted proxy). */
function direct(gw: Gateway, headers: OutgoingHttpHeaders): Promise<Answer> {
  const { hostname, port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: hostname,
        port,
        path: '/v1/orders/1',
        headers,
        localAddress: '127.0.0.3',
        agent: false,
      },
      (res) => collect(res, resolve),
    );
    req.on('error', reject);
    req.end();
  });
}

function sha256(der: Buffer): string {
  return createHash('sha256').update(der).digest('hex').toUpperCase();
}

/** The raw header names the upstream received that are about a certificate. */
function certificateFieldsAt(seen: ReceivedRequest): string[] {
  return seen.rawHeaders.filter((name, i) => i % 2 === 0 && /cert|ssl/i.test(name));
}

function lastReceived(gw: Gateway): ReceivedRequest {
  const seen = gw.upstream.received.at(-1);
  assert.ok(seen, 'the upstream received nothing');
  return seen;
}

describe('behind nginx terminating mutual TLS (docs/examples/nginx-mtls.conf)', () => {
  test('the partner’s certificate reaches the gateway, and the header never the upstream', async (t) => {
    const { gw, nginx, token } = await behindNginx(t);
    const answer = await throughNginx(nginx, files.client, {
      authorization: `Bearer ${token}`,
      'x-request-id': 'through-nginx',
    });
    assert.equal(answer.status, 200, answer.body);
    const line = await accessLineOf(gw.logs, 'through-nginx');
    assert.equal(line['tls.client.hash.sha256'], sha256(files.client.der));
    assert.equal(line['portaria.client_certificate.verdict'], 'verified');
    assert.equal(line['network.peer.address'], '127.0.0.1');
    assert.deepEqual(certificateFieldsAt(lastReceived(gw)), []);
  });

  test('a certificate header a client sends through nginx is replaced by nginx’s own', async (t) => {
    const { gw, nginx, token } = await behindNginx(t);
    const answer = await throughNginx(nginx, files.client, {
      authorization: `Bearer ${token}`,
      'x-request-id': 'spoofed-through-nginx',
      // Another partner's certificate, claimed by this one.
      'x-ssl-client-cert': encodeURIComponent(files.otherClient.pem),
      x_ssl_client_cert: encodeURIComponent(files.otherClient.pem),
    });
    assert.equal(answer.status, 200, answer.body);
    const line = await accessLineOf(gw.logs, 'spoofed-through-nginx');
    assert.equal(line['tls.client.hash.sha256'], sha256(files.client.der));
    assert.deepEqual(certificateFieldsAt(lastReceived(gw)), []);
  });

  test('a client sending the header straight to the gateway has no certificate', async (t) => {
    const { gw, token } = await behindNginx(t);
    const answer = await direct(gw, {
      authorization: `Bearer ${token}`,
      'x-request-id': 'straight-to-the-gateway',
      'x-ssl-client-cert': encodeURIComponent(files.client.pem),
    });
    assert.equal(answer.status, 200, answer.body);
    const line = await accessLineOf(gw.logs, 'straight-to-the-gateway');
    assert.equal(line['network.peer.address'], '127.0.0.3');
    assert.equal(line['tls.client.hash.sha256'], undefined);
    assert.deepEqual(certificateFieldsAt(lastReceived(gw)), []);
  });

  test('nginx refuses a connection without a certificate its CA issued: the gateway sees nothing', async (t) => {
    const { gw, nginx, token } = await behindNginx(t);
    const before = gw.upstream.received.length;
    for (const certificate of [null, files.wrongCaClient]) {
      const answer = await throughNginx(nginx, certificate, { authorization: `Bearer ${token}` });
      assert.equal(answer.status, 400, answer.body);
    }
    assert.equal(gw.upstream.received.length, before);
  });

  test('a WebSocket upgrade through nginx carries the certificate too', async (t) => {
    const { gw, nginx } = await behindNginx(t);
    const key = await readFile(files.client.key, 'utf8');
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: nginx.port,
        ca: files.ca.pem,
        cert: files.client.pem,
        key,
        servername: 'localhost',
      });
      const chunks: Buffer[] = [];
      socket.setTimeout(5000, () => socket.destroy());
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
      socket.on('error', (error) => (chunks.length > 0 ? undefined : reject(error)));
      socket.on('secureConnect', () => {
        // No token: the gateway refuses the upgrade, after reading the certificate.
        const head = [
          'GET /v1/live HTTP/1.1',
          'Host: api.example.com',
          'Connection: Upgrade',
          'Upgrade: websocket',
          'Sec-WebSocket-Version: 13',
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
          'X-Request-Id: upgrade-through-nginx',
          'Connection: close',
        ];
        socket.write(`${head.join('\r\n')}\r\n\r\n`);
      });
    });
    assert.equal(parseResponses(raw)[0]?.status, 401, raw);
    const line = await waitFor('the upgrade line', () =>
      parsedLogs(gw.logs).find((l) => l['portaria.request_id'] === 'upgrade-through-nginx'),
    );
    assert.equal(line['tls.client.hash.sha256'], sha256(files.client.der));
  });

  test('a token issued through nginx is bound to the partner’s certificate, and only that one carries it', async (t) => {
    const { gw, nginx } = await behindNginx(t);
    const issued = await throughNginx(
      nginx,
      files.client,
      { 'content-type': 'application/json' },
      {
        method: 'POST',
        path: '/v1/authentication/accesstoken',
        body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
      },
    );
    assert.equal(issued.status, 200, issued.body);
    const bound = JSON.parse(issued.body).token_de_acesso as string;
    assert.deepEqual(decodeJwt(bound).cnf, {
      'x5t#S256': createHash('sha256').update(files.client.der).digest('base64url'),
    });
    const auth = { authorization: `Bearer ${bound}` };
    assert.equal((await throughNginx(nginx, files.client, auth)).status, 200);
    const other = await throughNginx(nginx, files.otherClient, auth);
    assert.equal(other.status, 401);
    assert.equal(JSON.parse(other.body).tipo, 'urn:portaria:problem:token-binding-failed');
    // Straight to the gateway with the partner's certificate in the header: not a
    // trusted proxy, so no certificate, and the bound token does not pass.
    const spoofed = await direct(gw, {
      ...auth,
      'x-ssl-client-cert': encodeURIComponent(files.client.pem),
    });
    assert.equal(spoofed.status, 401);
    assert.equal(JSON.parse(spoofed.body).tipo, 'urn:portaria:problem:token-binding-failed');
  });
});
