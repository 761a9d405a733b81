/**
 * A group (`server.workers` > 1) with the Redis revocation store and Redis token limits,
 * beside another replica: the primary holds the Redis store and passes on to its workers
 * what it applies, from its own admin API (before the 201) and from other replicas
 * (pub/sub, within a second).
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runGateway, tempDir, waitForStatus } from '../helpers/process.js';
import { startRedis } from '../helpers/redisServer.js';
import { waitFor } from '../helpers/wait.js';
import {
  ADMIN_TOKEN,
  accessToken,
  jtiOf,
  protectedRequests,
  revoke,
  send,
  startGroup,
  startUpstream,
} from './groupGateway.js';

const WORKERS = 2;

describe('a group of workers with Redis', () => {
  test('revocations reach every worker: from the admin API before the 201, from another replica within 1 s', async (t) => {
    const redis = await startRedis(t);
    const upstream = await startUpstream(t);
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
      revocation: { store: 'redis', queueFile: 'queue.log' },
      tokenLimits: { store: 'redis' },
      redis: { url: redis.url },
    });
    // Replica B: one process, the group's keys, clients and admin token, its own ports (0).
    const dir = await tempDir(t, 'portaria-replica-b-');
    const config = JSON.parse(await readFile(group.files.configFile, 'utf8'));
    const configFile = join(dir, 'portaria.yaml');
    await writeFile(
      configFile,
      JSON.stringify({
        ...config,
        server: { ...config.server, port: 0, workers: 1 },
        admin: { host: '127.0.0.1', port: 0, tokenFile: join(group.dir, 'admin.token') },
        keys: { dir: join(group.dir, 'keys') },
        clients: { file: join(group.dir, 'clients.json') },
      }),
    );
    const b = runGateway(t, ['--config', configFile], { cwd: dir });
    const bAdmin = (await b.listening(30_000)).adminUrl;
    await waitForStatus(`${bAdmin}/readyz`, 200, 30_000);

    const first = await accessToken(group);
    assert.deepEqual(new Set(await protectedRequests(group, first, 10)), new Set([200]));
    const revoked = await revoke(group, { jti: jtiOf(first) });
    assert.equal(revoked.status, 201, revoked.body);
    assert.deepEqual(new Set(await protectedRequests(group, first, 20)), new Set([401]));

    const second = await accessToken(group);
    assert.deepEqual(new Set(await protectedRequests(group, second, 10)), new Set([200]));
    const viaB = await send(`${bAdmin}/admin/v1/revocations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ jti: jtiOf(second) }),
    });
    assert.equal(viaB.status, 201, viaB.body);
    const started = performance.now();
    await waitFor(
      'every worker refusing the token revoked through replica B',
      async () => {
        const statuses = await protectedRequests(group, second, 2 * WORKERS, WORKERS);
        return statuses.every((s) => s === 401) ? true : undefined;
      },
      3000,
      20,
    );
    const elapsed = performance.now() - started;
    assert.ok(elapsed < 1500, `refused after ${Math.round(elapsed)} ms`);
    assert.deepEqual(new Set(await protectedRequests(group, second, 20)), new Set([401]));

    const ready = await fetch(`${group.files.adminUrl}/readyz`);
    assert.equal(ready.status, 200, await ready.text());
    b.child.kill('SIGTERM');
    assert.equal((await b.exited).code, 0);
  });

  test("/readyz names every degraded reason: the primary's stale revocation list and the workers' replay store", async (t) => {
    const redis = await startRedis(t);
    const upstream = await startUpstream(t);
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
      revocation: { store: 'redis', queueFile: 'queue.log', maxSyncLagSeconds: 1 },
      oauth: { replayStore: 'redis' },
      redis: { url: redis.url },
    });
    const readyz = async () => {
      const res = await fetch(`${group.files.adminUrl}/readyz`);
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    assert.deepEqual(await readyz(), { status: 200, body: { status: 'ready' } });

    await redis.stop();
    // Before: the list's reason hid the workers' (only the first reason was kept).
    const degraded = await waitFor(
      'both reasons in /readyz',
      async () => {
        const ready = await readyz();
        const text = String(ready.body.degraded);
        return /revocation list stale/.test(text) && /replay store/.test(text) ? ready : undefined;
      },
      20_000,
    );
    assert.equal(degraded.status, 200);
    const reasons = String(degraded.body.degraded).split('; ');
    assert.equal(new Set(reasons).size, reasons.length, 'each reason once, not once per worker');
  });
});
