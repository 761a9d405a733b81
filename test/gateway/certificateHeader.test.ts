/**
 * The client certificate from a trusted proxy's header, through a real gateway: the
 * access line shows the certificate a request carried (`tls.client.hash.sha256`) and its
 * verdict; only a peer in `server.trustedProxies` is read (the tests send from 127.0.0.2,
 * the trusted proxy, or 127.0.0.1, anyone else); the header never reaches the upstream;
 * malformed values get 400 problem details naming the header, on requests and upgrades.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { type OutgoingHttpHeaders, request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import {
  type CertificateFile,
  type CertificateFiles,
  makeCertificateFiles,
} from '../helpers/certificateFiles.js';
import { type Gateway, type ReceivedRequest, startGateway } from '../helpers/fixture.js';
import { metric } from '../helpers/metrics.js';
import { parseResponses } from '../helpers/rawResponse.js';
import { startTlsGateway } from '../helpers/tlsGateway.js';
import { accessLineOf, type LogLine, parsedLogs, waitFor } from '../helpers/wait.js';

const PROXY = '127.0.0.2';
const CLIENT = '127.0.0.1';

let dir: string;
let files: CertificateFiles;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'portaria-certificate-header-'));
  files = await makeCertificateFiles(dir);
});
after(() => rm(dir, { recursive: true, force: true }));

type Format = 'rfc9440' | 'xfcc' | 'nginx';

async function gatewayFor(
  t: TestContext,
  clientCertificate: Record<string, unknown>,
  server: Record<string, unknown> = {},
): Promise<Gateway> {
  return startGateway(t, {
    settings: () => ({
      server: { trustedProxies: [PROXY], ...server },
      clientCertificate: {
        source: 'header',
        caFiles: [files.ca.cert],
        crlFiles: [files.crl, files.intermediateCrl],
        ...clientCertificate,
      },
    }),
  });
}

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** GET `path` from `from` (a loopback address) with `headers`, over a connection of its own. */
function send(
  gw: Gateway,
  from: string,
  headers: OutgoingHttpHeaders,
  path = '/v1/orders/1',
): Promise<Answer> {
  const { hostname, port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: hostname, port, path, localAddress: from, headers, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function sha256(der: Buffer): string {
  return createHash('sha256').update(der).digest('hex').toUpperCase();
}

/** The header lines that carry `file` (and `chain`) in `format`. */
function headersOf(
  format: Format,
  file: CertificateFile,
  chain: readonly CertificateFile[] = [],
): Record<string, string> {
  switch (format) {
    case 'rfc9440': {
      const out: Record<string, string> = { 'client-cert': `:${file.der.toString('base64')}:` };
      if (chain.length > 0) {
        out['client-cert-chain'] = chain.map((c) => `:${c.der.toString('base64')}:`).join(', ');
      }
      return out;
    }
    case 'xfcc': {
      const pairs = [
        'By=spiffe://cluster.local/ns/edge/sa/envoy',
        `Hash=${sha256(file.der).toLowerCase()}`,
        `Cert="${encodeURIComponent(file.pem)}"`,
      ];
      if (chain.length > 0) {
        pairs.push(`Chain="${encodeURIComponent([file, ...chain].map((c) => c.pem).join(''))}"`);
      }
      pairs.push(`Subject="${file.x509.subject}"`);
      return { 'x-forwarded-client-cert': pairs.join(';') };
    }
    case 'nginx':
      return { 'x-ssl-client-cert': encodeURIComponent(file.pem) };
  }
}

async function lineOf(gw: Gateway, answer: Answer): Promise<LogLine> {
  return accessLineOf(gw.logs, answer.headers['x-request-id'] as string);
}

function onlyReceived(gw: Gateway): ReceivedRequest {
  assert.equal(gw.upstream.received.length, 1);
  return gw.upstream.received[0] as ReceivedRequest;
}

/** Every raw header name the upstream received that is about a certificate. */
function certificateFieldsAt(seen: ReceivedRequest): string[] {
  return seen.rawHeaders.filter((_, i) => i % 2 === 0 && /cert|ssl/i.test(_ as string));
}

describe('a certificate from a trusted proxy’s header', () => {
  for (const format of ['rfc9440', 'xfcc', 'nginx'] as const) {
    test(`${format}: the request carries it (access line), and the upstream never sees the header`, async (t) => {
      const gw = await gatewayFor(t, { header: { format } });
      const token = await gw.token();
      const chain = format === 'nginx' ? [] : [files.intermediate];
      const leaf = format === 'nginx' ? files.client : files.chainedClient;
      const answer = await send(gw, PROXY, {
        authorization: `Bearer ${token}`,
        ...headersOf(format, leaf, chain),
      });
      assert.equal(answer.status, 200, answer.body);
      const line = await lineOf(gw, answer);
      assert.equal(line['tls.client.hash.sha256'], sha256(leaf.der));
      assert.equal(line['portaria.client_certificate.verdict'], 'verified');
      assert.equal(line['network.peer.address'], PROXY);
      assert.deepEqual(certificateFieldsAt(onlyReceived(gw)), []);
    });
  }

  const verdicts: ReadonlyArray<
    readonly [string, (f: CertificateFiles) => CertificateFile, string]
  > = [
    ['an expired certificate', (f) => f.expired, 'expired'],
    ['a certificate not yet valid', (f) => f.notYetValid, 'not-yet-valid'],
    ['a revoked certificate', (f) => f.revoked, 'revoked'],
    ['another CA’s certificate', (f) => f.wrongCaClient, 'untrusted'],
    ['a self-signed certificate', (f) => f.selfSigned, 'self-signed'],
    ['one through an intermediate the proxy did not pass', (f) => f.chainedClient, 'untrusted'],
  ];
  test('the gateway re-checks it: each verdict in the access line', async (t) => {
    const gw = await gatewayFor(t, { header: { format: 'nginx' } });
    const token = await gw.token();
    for (const [name, file, verdict] of verdicts) {
      const answer = await send(gw, PROXY, {
        authorization: `Bearer ${token}`,
        ...headersOf('nginx', file(files)),
      });
      // Refusing for a verdict is the job of the steps that use the certificate.
      assert.equal(answer.status, 200, name);
      const line = await lineOf(gw, answer);
      assert.equal(line['portaria.client_certificate.verdict'], verdict, name);
      assert.equal(line['tls.client.hash.sha256'], sha256(file(files).der), name);
    }
  });

  test('the token operation reads it too (an opening step, before any route)', async (t) => {
    const gw = await gatewayFor(t, { header: { format: 'nginx' } });
    const answer = await send(gw, PROXY, headersOf('nginx', files.client), '/v1/openapi.json');
    assert.equal(answer.status, 200);
    const line = await lineOf(gw, answer);
    assert.equal(line['tls.client.hash.sha256'], sha256(files.client.der));
  });
});

describe('the CA and CRL files', () => {
  test('a file that cannot be used stops the start, each problem named', async (t) => {
    await assert.rejects(
      gatewayFor(t, {
        caFiles: [files.ca.cert, join(dir, 'absent.pem')],
        crlFiles: [files.ca.cert],
      }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError, String(error));
        assert.deepEqual(error.problems, [
          `clientCertificate.caFiles[1]: cannot read ${join(dir, 'absent.pem')} (ENOENT)`,
          `clientCertificate.crlFiles[0]: ${files.ca.cert}: there is no X509 CRL block in it`,
        ]);
        return true;
      },
    );
  });
});

describe('a certificate header from anyone else', () => {
  test('is ignored (no certificate), counted, and removed before the upstream', async (t) => {
    const gw = await gatewayFor(t, { header: { format: 'nginx' } });
    const token = await gw.token();
    const answer = await send(gw, CLIENT, {
      authorization: `Bearer ${token}`,
      ...headersOf('nginx', files.client),
      'x-forwarded-client-cert': 'Cert="spoofed"',
      client_cert: 'spoofed',
    });
    assert.equal(answer.status, 200);
    const line = await lineOf(gw, answer);
    assert.equal(line['tls.client.hash.sha256'], undefined);
    assert.equal(line['portaria.client_certificate.verdict'], undefined);
    assert.deepEqual(certificateFieldsAt(onlyReceived(gw)), []);
    assert.equal(await metric(gw.adminUrl, 'portaria_client_certificate_headers_ignored_total'), 1);
  });

  test('a malformed one from anyone else is ignored too, not refused', async (t) => {
    const gw = await gatewayFor(t, { header: { format: 'nginx' } });
    const token = await gw.token();
    const answer = await send(gw, CLIENT, {
      authorization: `Bearer ${token}`,
      'x-ssl-client-cert': 'garbage',
    });
    assert.equal(answer.status, 200);
  });

  test('with source none the header is never read, even from a trusted proxy, and still removed', async (t) => {
    const gw = await gatewayFor(t, {
      source: 'none',
      caFiles: [],
      crlFiles: [],
      header: { format: 'nginx' },
    });
    const token = await gw.token();
    const answer = await send(gw, PROXY, {
      authorization: `Bearer ${token}`,
      ...headersOf('nginx', files.client),
      ...headersOf('rfc9440', files.client),
    });
    assert.equal(answer.status, 200);
    const line = await lineOf(gw, answer);
    assert.equal(line['tls.client.hash.sha256'], undefined);
    assert.deepEqual(certificateFieldsAt(onlyReceived(gw)), []);
  });

  test('with source tls the header is never read, even from a trusted proxy, and still removed', async (t) => {
    // Loopback is the trusted proxy here: the header is ignored all the same.
    const gw = await startTlsGateway(t, {
      clientCertificates: 'request',
      settings: () => ({ server: { trustedProxies: ['loopback'] } }),
    });
    const token = await gw.tlsToken();
    const answer = await gw.fetch('/v1/orders/1', {
      headers: {
        authorization: `Bearer ${token}`,
        ...headersOf('nginx', files.client),
        ...headersOf('rfc9440', files.client),
      },
    });
    assert.equal(answer.status, 200);
    await answer.arrayBuffer();
    const line = await accessLineOf(gw.logs, answer.headers.get('x-request-id') as string);
    // The connection's certificate, not the header's.
    assert.equal(line['tls.client.hash.sha256'], sha256(gw.pki.client.der));
    assert.deepEqual(certificateFieldsAt(gw.upstream.received.at(-1) as ReceivedRequest), []);
  });
});

describe('a malformed certificate header from a trusted proxy', () => {
  const malformed: ReadonlyArray<
    readonly [string, Format, (f: CertificateFiles) => OutgoingHttpHeaders, string, string]
  > = [
    [
      'two certificates where one is allowed',
      'nginx',
      (f) => ({ 'x-ssl-client-cert': encodeURIComponent(f.client.pem + f.otherClient.pem) }),
      'x-ssl-client-cert',
      'certificate-header-malformed',
    ],
    [
      'garbage base64',
      'rfc9440',
      () => ({ 'client-cert': ':bm90IGEg*Y2VydA==:' }),
      'client-cert',
      'certificate-header-malformed',
    ],
    [
      'bytes that are not a certificate',
      'rfc9440',
      () => ({ 'client-cert': ':bm90IGEgY2VydGlmaWNhdGU=:' }),
      'client-cert',
      'certificate-header-malformed',
    ],
    [
      'a PEM with trailing junk',
      'nginx',
      (f) => ({ 'x-ssl-client-cert': encodeURIComponent(`${f.client.pem}junk`) }),
      'x-ssl-client-cert',
      'certificate-header-malformed',
    ],
    [
      'the header on two lines',
      'nginx',
      (f) => ({
        'x-ssl-client-cert': [encodeURIComponent(f.client.pem), encodeURIComponent(f.client.pem)],
      }),
      'x-ssl-client-cert',
      'certificate-header-repeated',
    ],
    [
      'an XFCC element with only a Hash',
      'xfcc',
      (f) => ({ 'x-forwarded-client-cert': `Hash=${sha256(f.client.der)}` }),
      'x-forwarded-client-cert',
      'certificate-header-no-cert',
    ],
    [
      'an XFCC Hash of another certificate',
      'xfcc',
      (f) => ({
        'x-forwarded-client-cert': `Hash=${sha256(f.otherClient.der)};Cert="${encodeURIComponent(f.client.pem)}"`,
      }),
      'x-forwarded-client-cert',
      'certificate-hash-mismatch',
    ],
    [
      'a value over 16 KiB',
      'nginx',
      () => ({ 'x-ssl-client-cert': 'A'.repeat(16 * 1024 + 1) }),
      'x-ssl-client-cert',
      'certificate-header-too-large',
    ],
  ];
  for (const [name, format, headers, field, reason] of malformed) {
    test(`${name}: 400 naming ${field}, never quoting it, nothing forwarded`, async (t) => {
      const gw = await gatewayFor(t, { header: { format } }, { maxHeaderBytes: 65_536 });
      const token = await gw.token();
      const sent = headers(files);
      const answer = await send(gw, PROXY, { authorization: `Bearer ${token}`, ...sent });
      assert.equal(answer.status, 400);
      assert.equal(answer.headers['content-type'], 'application/problem+json');
      const problem = JSON.parse(answer.body) as Record<string, unknown>;
      assert.equal(problem.tipo, 'urn:portaria:problem:invalid-request');
      assert.match(String(problem.detalhe), new RegExp(`\\b${field}\\b`));
      for (const value of Object.values(sent).flat()) {
        assert.ok(!answer.body.includes(String(value).slice(0, 16)), 'the value is quoted');
      }
      assert.equal((await lineOf(gw, answer))['portaria.reason'], reason);
      assert.equal(gw.upstream.received.length, 0);
    });
  }

  test('a WebSocket upgrade reads the header too: a malformed one is refused on the socket', async (t) => {
    const gw = await gatewayFor(t, { header: { format: 'nginx' } });
    const token = await gw.token();
    const lines = [
      'GET /v1/live HTTP/1.1',
      'Host: gateway.test',
      `Authorization: Bearer ${token}`,
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      'X-Request-Id: upgrade-malformed',
      'X-SSL-Client-Cert: garbage',
    ];
    const raw = await rawFrom(gw, PROXY, `${lines.join('\r\n')}\r\n\r\n`);
    const [response] = parseResponses(raw);
    assert.equal(response?.status, 400);
    assert.match(response?.body ?? '', /x-ssl-client-cert/);
  });

  test('a WebSocket upgrade with a good one carries it: its access line names the certificate', async (t) => {
    const gw = await gatewayFor(t, { header: { format: 'nginx' } });
    const lines = [
      'GET /v1/live HTTP/1.1',
      'Host: gateway.test',
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      'X-Request-Id: upgrade-certificate',
      `X-SSL-Client-Cert: ${encodeURIComponent(files.client.pem)}`,
    ];
    const raw = await rawFrom(gw, PROXY, `${lines.join('\r\n')}\r\n\r\n`);
    // No token: refused after the opening steps, with the certificate already read.
    assert.equal(parseResponses(raw)[0]?.status, 401);
    const line = await waitFor('the upgrade line', () =>
      parsedLogs(gw.logs).find((l) => l['portaria.request_id'] === 'upgrade-certificate'),
    );
    assert.equal(line['tls.client.hash.sha256'], sha256(files.client.der));
    assert.equal(line['portaria.client_certificate.verdict'], 'verified');
  });

  test('nginx’s $ssl_client_cert (folded lines) never arrives: the parser refuses it', async (t) => {
    const gw = await gatewayFor(t, { header: { format: 'nginx' } });
    const folded = files.client.pem.trimEnd().split('\n').join('\r\n\t');
    const raw = await rawFrom(
      gw,
      PROXY,
      `GET /v1/orders/1 HTTP/1.1\r\nHost: gateway.test\r\nX-SSL-Client-Cert: ${folded}\r\n\r\n`,
    );
    assert.equal(parseResponses(raw)[0]?.status, 400);
    assert.equal(gw.upstream.received.length, 0);
  });
});

/** Sends `payload` over TCP from `from` and returns what came back until the close. */
function rawFrom(gw: Gateway, from: string, payload: string): Promise<string> {
  const { hostname, port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), localAddress: from });
    const chunks: Buffer[] = [];
    socket.setTimeout(5000, () => socket.destroy());
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', (error) => (chunks.length > 0 ? undefined : reject(error)));
    socket.write(payload);
  });
}
