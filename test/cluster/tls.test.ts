/**
 * A group (`server.workers` > 1) with TLS on the public listener: every worker serves
 * HTTPS on the shared socket, a client certificate's verdict reaches whichever worker
 * takes the connection, a session opened on one worker resumes on the others (the ticket
 * keys are the group's), and a new certificate reaches every worker.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { connect, type TLSSocket } from 'node:tls';
import { createTestPki, type IssuedCertificate, type TestPki } from '../helpers/certificates.js';
import { tempDir } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import { type Group, startGroup, startUpstream, waitForLines } from './groupGateway.js';

const WORKERS = 2;

interface Visit {
  readonly status: string;
  readonly resumed: boolean;
  readonly served: string;
  readonly session: Buffer | undefined;
}

/** One request on a TLS connection of its own, tagged with `requestId`. */
function visit(
  url: string,
  pki: TestPki,
  options: {
    requestId: string;
    client?: IssuedCertificate;
    session?: Buffer;
    request?: string;
  },
): Promise<Visit> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let session: Buffer | undefined;
    let received = '';
    // Read at the handshake: once closed, the socket has no TLS state left.
    let resumed = false;
    let served = '';
    const socket: TLSSocket = connect(
      {
        host: hostname,
        port: Number(port),
        ca: pki.ca.pem,
        ...(options.client === undefined
          ? {}
          : { cert: options.client.cert, key: options.client.key }),
        ...(options.session === undefined ? {} : { session: options.session }),
      },
      () => {
        resumed = socket.isSessionReused();
        served = createHash('sha256')
          .update(socket.getPeerX509Certificate()?.raw ?? Buffer.alloc(0))
          .digest('hex');
        socket.write(
          options.request ??
            `GET /.well-known/jwks.json HTTP/1.1\r\nHost: gw\r\nX-Request-Id: ${options.requestId}\r\nConnection: close\r\n\r\n`,
        );
      },
    );
    socket.on('session', (value: Buffer) => {
      session = value;
    });
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () =>
      resolve({ status: received.split('\r\n')[0] ?? '', resumed, served, session }),
    );
  });
}

describe('TLS in a group of workers', () => {
  test('every worker serves TLS, client certificates included, and a session resumes on any worker', async (t) => {
    const upstream = await startUpstream(t);
    const pki = await createTestPki(await tempDir(t, 'portaria-pki-'));
    const group = await startGroup(t, WORKERS, {
      issuer: 'https://portaria.test',
      upstream: { default: { upstream: upstream.url } },
      server: {
        tls: {
          enabled: true,
          certFile: pki.server.certFile,
          keyFile: pki.server.keyFile,
          clientCertificates: 'require',
        },
      },
      clientCertificate: { source: 'tls', caFiles: [pki.ca.certFile] },
    });
    assert.match(group.files.publicUrl, /^https:/);
    const first = await visit(group.files.publicUrl, pki, {
      requestId: 'first',
      client: pki.client,
    });
    assert.equal(first.status, 'HTTP/1.1 200 OK');
    const results: Visit[] = [];
    // Pairs until every worker took a resumed and an expired one (the kernel picks the
    // worker that accepts), at least 12 and at most 60.
    let pairs = 0;
    while (
      pairs < 12 ||
      ((workersAnswered(group, 'resumed-') < WORKERS ||
        workersAnswered(group, 'expired-') < WORKERS) &&
        pairs < 60)
    ) {
      results.push(
        await visit(group.files.publicUrl, pki, {
          requestId: `resumed-${pairs}`,
          client: pki.client,
          session: first.session as Buffer,
        }),
      );
      results.push(
        await visit(group.files.publicUrl, pki, {
          requestId: `expired-${pairs}`,
          client: pki.expiredClient,
          request: `GET /v1/orders HTTP/1.1\r\nHost: gw\r\nX-Request-Id: expired-${pairs}\r\nConnection: close\r\n\r\n`,
        }),
      );
      pairs++;
      await linesFor(group, 'expired-', pairs);
    }
    const resumed = results.filter((_, i) => i % 2 === 0);
    const expired = results.filter((_, i) => i % 2 === 1);
    assert.deepEqual(
      resumed.map((r) => [r.status, r.resumed]),
      resumed.map(() => ['HTTP/1.1 200 OK', true]),
    );
    assert.deepEqual(
      expired.map((r) => r.status),
      expired.map(() => 'HTTP/1.1 401 Unauthorized'),
    );
    const lines = await linesFor(group, '', 2 * pairs);
    assert.equal(workersAnswered(group, 'resumed-'), WORKERS, 'resumed on every worker');
    assert.equal(workersAnswered(group, 'expired-'), WORKERS, 'refused by every worker');
    assert.ok(
      lines
        .filter((l) => String(l['portaria.request_id']).startsWith('expired-'))
        .every((l) => l['portaria.reason'] === 'certificate-expired'),
    );
  });

  test('a new server certificate reaches every worker, and sessions from before resume on each', async (t) => {
    const upstream = await startUpstream(t);
    const dir = await tempDir(t, 'portaria-pki-');
    const pki = await createTestPki(dir);
    const certFile = join(dir, 'live.crt');
    const keyFile = join(dir, 'live.key');
    await copyFile(pki.server.certFile, certFile);
    await copyFile(pki.server.keyFile, keyFile);
    const group = await startGroup(t, WORKERS, {
      issuer: 'https://portaria.test',
      upstream: { default: { upstream: upstream.url } },
      reload: { pollIntervalMs: 200 },
      server: { tls: { enabled: true, certFile, keyFile } },
    });
    const before = await visit(group.files.publicUrl, pki, { requestId: 'before' });
    const next = await pki.ca.issue('server-next', { use: 'server' });
    await writeFile(keyFile, next.key);
    await writeFile(certFile, next.cert);
    const expected = createHash('sha256').update(next.der).digest('hex');
    await waitForLines(
      group,
      'every worker reloaded',
      (l) => l.msg === 'reloaded' && l.source === 'tls',
      WORKERS,
    );
    const served = new Set<string>();
    await waitFor(
      'the new certificate on 8 connections in a row',
      async () => {
        for (let i = 0; i < 8; i++) {
          served.add((await visit(group.files.publicUrl, pki, { requestId: `after-${i}` })).served);
        }
        if (served.size === 1 && served.has(expected)) return true;
        served.clear();
        return undefined;
      },
      10_000,
      100,
    );
    // Every worker derives its keys from the group's one base: none refuses the session.
    // Connections until every worker took one (the kernel picks the worker that accepts:
    // twelve in a row can all land on one), at most 60.
    let sent = 0;
    while (sent < 12 || (workersAnswered(group, 'again-') < WORKERS && sent < 60)) {
      const again = await visit(group.files.publicUrl, pki, {
        requestId: `again-${sent}`,
        session: before.session as Buffer,
      });
      assert.equal(again.resumed, true, `again-${sent}`);
      sent++;
      await linesFor(group, 'again-', sent);
    }
    assert.equal(workersAnswered(group, 'again-'), WORKERS);
  });
});

/** The access lines so far whose request id starts with `prefix` (and has a `-`). */
function requestLines(group: Group, prefix: string): Record<string, unknown>[] {
  return group
    .lines()
    .filter(
      (l) =>
        l.msg === 'request' &&
        String(l['portaria.request_id']).includes('-') &&
        String(l['portaria.request_id']).startsWith(prefix),
    );
}

/** How many workers wrote a line for a request id starting with `prefix`. */
function workersAnswered(group: Group, prefix: string): number {
  return new Set(requestLines(group, prefix).map((l) => l.worker)).size;
}

/** Waits for `count` such lines (each is written as its response closes). */
function linesFor(group: Group, prefix: string, count: number): Promise<Record<string, unknown>[]> {
  return waitForLines(
    group,
    `${count} access lines of ${prefix || 'the requests'}`,
    (l) =>
      l.msg === 'request' &&
      String(l['portaria.request_id']).includes('-') &&
      String(l['portaria.request_id']).startsWith(prefix),
    count,
  );
}
