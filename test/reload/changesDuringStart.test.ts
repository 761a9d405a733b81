/**
 * A gateway process that waits during its start (here: for a Redis that accepts the
 * connection and never answers, up to redis.connectTimeoutMs) must not lose what
 * happens in that window: a clients file changed after it was read is reloaded once the
 * gateway runs, and a SIGHUP neither kills the process nor goes unheeded.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readdir, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { CLIENT_ID, CLIENT_SECRET, TOKEN_PATH } from '../helpers/fixture.js';
import { runGateway, tempDir, writeGatewayFiles } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

const LATE_ID = 'late-partner';
const LATE_SECRET = 'late-secret-0123456789abcdefghijklmnopqrstuv';

/** A TCP server that takes connections and never answers: a Redis that hangs. */
async function silentServer(t: TestContext): Promise<{ server: Server; url: string }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return { server, url: `redis://127.0.0.1:${address.port}` };
}

async function startingGateway(t: TestContext) {
  const redis = await silentServer(t);
  const dir = await tempDir(t, 'portaria-start-window-');
  const files = await writeGatewayFiles(dir, [[CLIENT_ID, CLIENT_SECRET, ['orders:read']]], {
    revocation: { store: 'redis' },
    redis: { url: redis.url, connectTimeoutMs: 2000 },
    reload: { pollIntervalMs: 200 },
    tokenLimits: {
      perAddress: { enabled: false },
      perClient: { enabled: false },
      failedSecretBackoff: { enabled: false },
    },
  });
  // The store connects to Redis only once clients and keys were read.
  const connected = once(redis.server, 'connection');
  const gateway = runGateway(t, ['--config', files.configFile]);
  await connected;
  return { dir, files, gateway };
}

function tokenStatus(publicUrl: string, clientId: string, secret: string): Promise<number> {
  return fetch(publicUrl + TOKEN_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, clientSecret: secret }),
  }).then(async (res) => {
    await res.arrayBuffer();
    return res.status;
  });
}

test('a clients file changed while the gateway starts is reloaded once it runs', async (t) => {
  const { dir, gateway } = await startingGateway(t);
  const clients = [
    [CLIENT_ID, CLIENT_SECRET],
    [LATE_ID, LATE_SECRET],
  ].map(([id, secret]) => ({
    id,
    secrets: [{ hash: hashGeneratedSecret(secret as string) }],
    scopes: ['orders:read'],
  }));
  await writeFile(join(dir, 'clients.json'), JSON.stringify({ clients }));
  const { publicUrl } = await gateway.listening();
  await waitFor(
    'the late client gets a token',
    async () => ((await tokenStatus(publicUrl, LATE_ID, LATE_SECRET)) === 200 ? true : undefined),
    5000,
    100,
  );
  assert.match(gateway.stdout(), /"source":"clients","msg":"reloaded"/);
});

test('a SIGHUP while the gateway starts does not end it, and reloads once it runs', async (t) => {
  const { gateway } = await startingGateway(t);
  gateway.child.kill('SIGHUP');
  await gateway.waitForOutput('stdout', /"msg":"listening"/, 10_000);
  await gateway.waitForOutput('stdout', /"signal":"SIGHUP".*signal received: reloading/, 5000);
  assert.equal(gateway.child.exitCode, null);
  assert.equal(gateway.child.signalCode, null);
});

test('a SIGTERM while the gateway starts ends it at once and leaves no lock file behind', async (t) => {
  const { dir, gateway } = await startingGateway(t);
  // The store holds its queue file's lock while it waits for Redis.
  await waitFor(
    'the queue lock',
    async () =>
      (await readdir(join(dir, 'data'))).some((name) => name.endsWith('.lock')) ? true : undefined,
    5000,
    20,
  );
  gateway.child.kill('SIGTERM');
  assert.deepEqual(await gateway.exited, { code: 143, signal: null });
  assert.deepEqual(
    (await readdir(join(dir, 'data'))).filter((name) => name.endsWith('.lock')),
    [],
  );
});

test('a SIGHUP while the gateway modules are still loading does not end it', async (t) => {
  const dir = await tempDir(t, 'portaria-hup-');
  const files = await writeGatewayFiles(dir, [[CLIENT_ID, CLIENT_SECRET, ['orders:read']]], {
    upstream: { default: { upstream: 'http://127.0.0.1:9' } },
  });
  // A preload says when Node starts running the entry module: the SIGHUP follows 50 ms
  // later, while the gateway's modules load (a few hundred milliseconds). Before, they
  // were static imports evaluated ahead of the handlers, and the process exited (129).
  const preload = join(dir, 'preload.mjs');
  await writeFile(preload, "process.stderr.write('entry starting\\n');\n");
  const gateway = runGateway(t, ['--config', files.configFile], {
    nodeArgs: ['--import', pathToFileURL(preload).href],
  });
  await gateway.waitForOutput('stderr', /entry starting/, 5000);
  await new Promise((resolve) => setTimeout(resolve, 50));
  gateway.child.kill('SIGHUP');
  await gateway.waitForOutput('stdout', /"msg":"listening"/, 10_000);
  await gateway.waitForOutput('stdout', /"signal":"SIGHUP".*signal received: reloading/, 5000);
  assert.equal(gateway.child.exitCode, null, gateway.stderr());
  assert.equal(gateway.child.signalCode, null);
  gateway.child.kill('SIGTERM');
  assert.deepEqual(await gateway.exited, { code: 0, signal: null });
});
