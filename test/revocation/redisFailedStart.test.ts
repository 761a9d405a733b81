/**
 * A start that fails after the Redis revocation store connected (here: the public port
 * is taken) exits at once with status 1: the open Redis connections must not keep a
 * half-started gateway process alive.
 */
import assert from 'node:assert/strict';
import { type AddressInfo, createServer } from 'node:net';
import { test } from 'node:test';
import { CLIENT_ID, CLIENT_SECRET } from '../helpers/fixture.js';
import { runGateway, tempDir, writeGatewayFiles } from '../helpers/process.js';
import { startRedis } from '../helpers/redisServer.js';

test('a failed start with the Redis store connected exits 1 promptly', async (t) => {
  const redis = await startRedis(t);
  const dir = await tempDir(t, 'portaria-failed-start-');
  // A port held for the whole test, which the config names as the public port.
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
  const taken = (blocker.address() as AddressInfo).port;
  const files = await writeGatewayFiles(dir, [[CLIENT_ID, CLIENT_SECRET, ['orders:read']]], {
    server: { port: taken },
    revocation: { store: 'redis' },
    redis: { url: redis.url },
  });

  const gateway = runGateway(t, ['--config', files.configFile]);
  const timeout = new Promise<'hung'>((resolve) =>
    setTimeout(() => resolve('hung'), 10_000).unref(),
  );
  const result = await Promise.race([gateway.exited, timeout]);
  assert.notEqual(result, 'hung', `still running: ${gateway.stdout()}${gateway.stderr()}`);
  assert.deepEqual(result, { code: 1, signal: null });
  assert.match(gateway.stderr(), /EADDRINUSE|address already in use/i);
});
