/**
 * The nginx helper: nginx answers on the socket the test bound on port 0 and handed it,
 * a configuration nginx refuses fails the start with its error log, and the process is
 * gone once the test ends.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { startNginx } from './nginxServer.js';

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-nginx-helper-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('nginx answers on the port the helper took on port 0', async (t) => {
  const nginx = await startNginx(t, {
    dir: await tempDir(t),
    http: (port) => `server { listen 127.0.0.1:${port}; return 200 "port ${port}"; }\n`,
  });
  const res = await fetch(`http://127.0.0.1:${nginx.port}/`);
  assert.equal(await res.text(), `port ${nginx.port}`);
  assert.match(await nginx.errors(), /using inherited sockets from "3;"/);
  await nginx.stop();
  await assert.rejects(fetch(`http://127.0.0.1:${nginx.port}/`));
});

test('a configuration nginx refuses fails the start, with nginx’s reason', async (t) => {
  await assert.rejects(
    startNginx(t, {
      dir: await tempDir(t),
      http: (port) => `server { listen 127.0.0.1:${port}; no_such_directive on; }\n`,
    }),
    /nginx did not start[\s\S]*unknown directive "no_such_directive"/,
  );
});
