/**
 * The TLS files reloaded while connections are open: a new server certificate is served
 * to new handshakes while a keep-alive connection opened before keeps working; a bad
 * file is logged, counted and kept out; a new CRL refuses a revoked partner's new
 * connections and its sessions no longer resume, while a renewed server certificate
 * alone leaves sessions resumable. The files change as an operator (or the kubelet)
 * changes them, and the watch picks them up.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { connect, type TLSSocket } from 'node:tls';
import type { IssuedCertificate, TestPki } from '../helpers/certificates.js';
import { createTestPki } from '../helpers/certificates.js';
import { sample, scrape } from '../helpers/metrics.js';
import { tempDir } from '../helpers/process.js';
import { startTlsGateway, type TlsGateway } from '../helpers/tlsGateway.js';
import { parsedLogs, waitFor } from '../helpers/wait.js';

const RELOAD = { reload: { pollIntervalMs: 200 } };

/** A pki whose server certificate and key are copies the test may overwrite, and a CRL too. */
async function livePki(
  t: TestContext,
): Promise<{ pki: TestPki; certFile: string; keyFile: string; crlFile: string }> {
  const dir = await tempDir(t, 'portaria-pki-');
  const pki = await createTestPki(dir);
  const live = {
    certFile: join(dir, 'live.crt'),
    keyFile: join(dir, 'live.key'),
    crlFile: join(dir, 'live.crl.pem'),
  };
  await copyFile(pki.server.certFile, live.certFile);
  await copyFile(pki.server.keyFile, live.keyFile);
  await copyFile(pki.crlFile, live.crlFile);
  return { pki, ...live };
}

/** One keep-alive TLS connection that sends requests in turn and reads each whole answer. */
interface Connection {
  readonly socket: TLSSocket;
  /** SHA-256 of the server certificate this connection got (of nothing when resumed). */
  readonly served: string;
  /** Sends a GET and resolves with the answer's status line. */
  get(path: string, headers?: Record<string, string>): Promise<string>;
}

function fingerprint(der: Buffer): string {
  return createHash('sha256').update(der).digest('hex');
}

async function open(
  t: TestContext,
  gw: TlsGateway,
  client: IssuedCertificate | null,
  session?: Buffer,
): Promise<Connection & { session(): Promise<Buffer> }> {
  const url = new URL(gw.url);
  let ticket: Buffer | undefined;
  const socket = await new Promise<TLSSocket>((resolve, reject) => {
    const s = connect(
      {
        host: url.hostname,
        port: Number(url.port),
        ca: gw.pki.ca.pem,
        ...(client === null ? {} : { cert: client.cert, key: client.key }),
        ...(session === undefined ? {} : { session }),
      },
      () => resolve(s),
    );
    s.once('error', reject);
    s.on('session', (value: Buffer) => {
      ticket = value;
    });
  });
  t.after(() => socket.destroy());
  socket.setEncoding('latin1');
  let buffer = '';
  let waiting: (() => void) | null = null;
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    waiting?.();
  });
  const answer = async (): Promise<string> => {
    for (;;) {
      const end = buffer.indexOf('\r\n\r\n');
      if (end !== -1) {
        const head = buffer.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffer.length >= end + 4 + length) {
          buffer = buffer.slice(end + 4 + length);
          return head.split('\r\n')[0] as string;
        }
      }
      await new Promise<void>((resolve) => {
        waiting = resolve;
      });
      waiting = null;
    }
  };
  return {
    socket,
    // A resumed session is sent no certificate.
    served: fingerprint(socket.getPeerX509Certificate()?.raw ?? Buffer.alloc(0)),
    get(path, headers = {}) {
      const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.write(`GET ${path} HTTP/1.1\r\nHost: gateway\r\n${lines.join('')}\r\n`);
      return answer();
    },
    session: () => waitFor('a session ticket', () => ticket, 2000),
  };
}

/** Writes the key and then the certificate of `next` over the live files. */
async function swapServerCertificate(
  live: { certFile: string; keyFile: string },
  next: IssuedCertificate,
) {
  await writeFile(live.keyFile, next.key);
  await writeFile(live.certFile, next.cert);
}

async function reloads(gw: TlsGateway, outcome: 'applied' | 'failed'): Promise<number> {
  return (
    sample(
      await scrape(gw.adminUrl),
      `portaria_config_reload_total{source="tls",outcome="${outcome}"}`,
    ) ?? 0
  );
}

describe('reloading the TLS files', () => {
  test('a new server certificate is served to new handshakes; an open keep-alive connection keeps working', async (t) => {
    const live = await livePki(t);
    const gw = await startTlsGateway(t, {
      pki: live.pki,
      tls: { certFile: live.certFile, keyFile: live.keyFile },
      settings: () => ({ ...RELOAD, server: { keepAliveTimeoutMs: 30_000 } }),
    });
    const before = await open(t, gw, null);
    assert.equal(await before.get('/.well-known/jwks.json'), 'HTTP/1.1 200 OK');
    const next = await live.pki.ca.issue('server-next', { use: 'server' });
    await swapServerCertificate(live, next);
    await waitFor(
      'the tls reload',
      async () => ((await reloads(gw, 'applied')) >= 1 ? true : undefined),
      5000,
    );
    const after = await open(t, gw, null);
    assert.equal(after.served, fingerprint(next.der));
    assert.equal(before.served, fingerprint(live.pki.server.der));
    assert.equal(await before.get('/.well-known/jwks.json'), 'HTTP/1.1 200 OK');
    assert.equal(await after.get('/.well-known/jwks.json'), 'HTTP/1.1 200 OK');
    const line = parsedLogs(gw.logs).find((l) => l.msg === 'reloaded' && l.source === 'tls');
    assert.ok(line);
  });

  test('a bad new file is logged and counted, and the running certificate is kept', async (t) => {
    const live = await livePki(t);
    const gw = await startTlsGateway(t, {
      pki: live.pki,
      tls: { certFile: live.certFile, keyFile: live.keyFile },
      settings: () => RELOAD,
    });
    // A certificate whose key is not the running one: the pair does not match.
    const other = await live.pki.ca.issue('server-other', { use: 'server' });
    await writeFile(live.certFile, other.cert);
    await waitFor(
      'the failed tls reload',
      async () => ((await reloads(gw, 'failed')) >= 1 ? true : undefined),
      5000,
    );
    const line = parsedLogs(gw.logs).find(
      (l) => l.msg === 'reload failed: keeping the previous configuration' && l.source === 'tls',
    );
    assert.deepEqual(line?.problems, [
      'server.tls.keyFile: is not the key of the certificate in server.tls.certFile (the first one)',
    ]);
    const metrics = await scrape(gw.adminUrl);
    assert.equal(sample(metrics, 'portaria_config_last_reload_successful{source="tls"}'), 0);
    const still = await open(t, gw, null);
    assert.equal(still.served, fingerprint(live.pki.server.der));
    assert.equal(await still.get('/.well-known/jwks.json'), 'HTTP/1.1 200 OK');
    await writeFile(live.certFile, 'garbage');
    await waitFor(
      'the second failed reload',
      async () => ((await reloads(gw, 'failed')) >= 2 ? true : undefined),
      5000,
    );
    assert.equal((await open(t, gw, null)).served, fingerprint(live.pki.server.der));
  });

  test('a new CRL refuses a revoked partner’s new connections, and its session no longer resumes', async (t) => {
    const live = await livePki(t);
    const partner = await live.pki.ca.issue('partner-2', { use: 'client' });
    const gw = await startTlsGateway(t, {
      pki: live.pki,
      clientCertificates: 'require',
      clientCertificate: { crlFiles: [live.crlFile] },
      settings: () => ({ ...RELOAD, server: { keepAliveTimeoutMs: 30_000 } }),
    });
    const first = await open(t, gw, partner);
    assert.equal(await first.get('/.well-known/jwks.json'), 'HTTP/1.1 200 OK');
    const session = await first.session();
    const resumed = await open(t, gw, partner, session);
    assert.equal(resumed.socket.isSessionReused(), true, 'resumption works before the change');
    await live.pki.ca.revoke(partner);
    await live.pki.ca.crl({ file: live.crlFile });
    await waitFor(
      'the tls reload',
      async () => ((await reloads(gw, 'applied')) >= 1 ? true : undefined),
      5000,
    );
    const after = await open(t, gw, partner, session);
    assert.equal(after.socket.isSessionReused(), false);
    assert.equal(await after.get('/v1/orders/1'), 'HTTP/1.1 401 Unauthorized');
    // The connection opened before the change keeps the verdict it was given.
    assert.equal(await first.get('/v1/orders/1'), 'HTTP/1.1 401 Unauthorized');
    const reasons = await waitFor('both refusals logged', () => {
      const found = parsedLogs(gw.logs)
        .filter((l) => l.msg === 'request' && l['http.response.status_code'] === 401)
        .map((l) => l['portaria.reason']);
      return found.length === 2 ? found : undefined;
    });
    assert.deepEqual(reasons.sort(), ['certificate-revoked', 'no-authorization']);
  });

  test('a renewed server certificate alone keeps sessions resumable', async (t) => {
    const live = await livePki(t);
    const gw = await startTlsGateway(t, {
      pki: live.pki,
      tls: { certFile: live.certFile, keyFile: live.keyFile },
      settings: () => RELOAD,
    });
    const first = await open(t, gw, null);
    const session = await first.session();
    await swapServerCertificate(live, await live.pki.ca.issue('server-renewed', { use: 'server' }));
    await waitFor(
      'the tls reload',
      async () => ((await reloads(gw, 'applied')) >= 1 ? true : undefined),
      5000,
    );
    const resumed = await open(t, gw, null, session);
    assert.equal(resumed.socket.isSessionReused(), true);
  });
});
