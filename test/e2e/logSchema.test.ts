/**
 * One log schema on stdout of the real process: every line the gateway writes — start,
 * access lines (the hand-written `request`, pino's `upgrade`), warnings (`request failed`),
 * reloads and shutdown — carries `time` as the same ISO 8601 UTC string with milliseconds,
 * so a log store maps the field once, and no `worker` (there is no group).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import {
  NOBODY_LISTENS,
  runGateway,
  tempDir,
  waitForStatus,
  writeGatewayFiles,
} from '../helpers/process.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'schema-secret-0123456789abcdefghijklmnopqrstu';
const ISO_MS_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

test('every line type the gateway writes has time as an ISO 8601 UTC string with milliseconds', async (t) => {
  const upstream = createServer((_req, res) => res.end('ok'));
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  t.after(() => {
    upstream.closeAllConnections();
    upstream.close();
  });
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;
  const nobody = NOBODY_LISTENS;

  const dir = await tempDir(t, 'portaria-log-schema-');
  const { configFile } = await writeGatewayFiles(dir, [['acme', SECRET, ['orders:read']]], {
    upstream: { default: { upstream: upstreamUrl } },
    routes: [{ id: 'down', prefix: '/v1/down', upstream: nobody }],
    log: { level: 'info' },
  });
  const proc = runGateway(t, ['--config', configFile], { cwd: dir });
  const files = await proc.listening();
  await waitForStatus(`${files.adminUrl}/readyz`, 200);

  const tokenRes = await fetch(`${files.publicUrl}/v1/authentication/accesstoken`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: 'acme', clientSecret: SECRET }),
  });
  const token = ((await tokenRes.json()) as { token_de_acesso: string }).token_de_acesso;
  const bearer = { authorization: `Bearer ${token}` };
  assert.equal((await fetch(`${files.publicUrl}/v1/orders/1`, { headers: bearer })).status, 200);
  assert.equal((await fetch(`${files.publicUrl}/v1/down/1`, { headers: bearer })).status, 502);
  await rawRequest(
    files.publicUrl,
    'GET /v1/live HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
  );

  // A reload that applies something: one more client.
  const clientsFile = join(dir, 'clients.json');
  const clients = JSON.parse(await readFile(clientsFile, 'utf8')) as { clients: unknown[] };
  clients.clients.push({
    id: 'newbie',
    secrets: [{ hash: hashGeneratedSecret(`${SECRET}-2`) }],
    scopes: ['orders:read'],
  });
  await writeFile(clientsFile, JSON.stringify(clients));
  await appendFile(clientsFile, '\n');
  proc.child.kill('SIGHUP');
  await proc.waitForOutput('stdout', /"msg":"reloaded"/);

  proc.child.kill('SIGTERM');
  assert.equal((await proc.exited).code, 0);

  const lines = await waitFor('the last line', () => {
    const text = proc.stdout();
    return text.includes('"msg":"stopped"') ? text.split('\n').filter(Boolean) : undefined;
  });
  const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  const messages = new Set(parsed.map((l) => l.msg));
  for (const msg of [
    'listening',
    'request',
    'request failed',
    'upgrade',
    'signal received: reloading',
    'reloaded',
    'shutting down: draining',
    'stopped',
  ]) {
    assert.ok(messages.has(msg), `a "${msg}" line: ${[...messages].join(', ')}`);
  }
  for (const line of parsed) {
    // One process, no group: no line names a worker.
    assert.equal(line.worker, undefined, JSON.stringify(line));
    assert.equal(typeof line.time, 'string', JSON.stringify(line));
    assert.match(line.time as string, ISO_MS_UTC, JSON.stringify(line));
    assert.ok(Math.abs(Date.parse(line.time as string) - Date.now()) < 120_000);
  }
});
