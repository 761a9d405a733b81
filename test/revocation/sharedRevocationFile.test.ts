/**
 * Two real gateway processes (`main.js --config`) on one `revocation.file` — an
 * overlapping restart, pm2 cluster mode, a second start by mistake: the second exits 1 at
 * start naming the file and the first one's pid, without a stack trace, instead of
 * appending to a file the first one replaces. Once the first has stopped (SIGTERM: the
 * lock is removed) or was SIGKILLed (the lock stays, its pid is gone), the next one starts.
 * The Redis store's `revocation.queueFile` is held the same way.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { lockPathFor } from '../../src/lib/lockFile.js';
import { RevocationQueue } from '../../src/revocation/revocationQueue.js';
import {
  MAIN_JS,
  runGateway,
  runToEnd,
  tempDir,
  testEnv,
  waitForStatus,
  writeGatewayFiles,
} from '../helpers/process.js';

const SECRET = 'shared-file-secret-0123456789abcdefghijklmnop';

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Gateway A's config, and B: a copy (both on port 0: same keys, clients and revocation file). */
async function twoConfigs(t: TestContext) {
  const dir = await tempDir(t, 'portaria-shared-log-');
  const a = await writeGatewayFiles(dir, [['acme', SECRET, ['orders:read']]], {
    upstream: { default: { upstream: 'http://127.0.0.1:9' } },
  });
  const b = join(dir, 'portaria-b.yaml');
  await writeFile(b, await readFile(a.configFile, 'utf8'));
  return { dir, a, b: { configFile: b }, logFile: join(dir, 'data', 'revocations.log') };
}

test('a second gateway on the same revocation.file exits 1 naming the file and the first one, and starts once the first has stopped', async (t) => {
  const { dir, a, b, logFile } = await twoConfigs(t);
  const first = runGateway(t, ['--config', a.configFile], { cwd: dir });
  const firstUrls = await first.listening();
  await waitForStatus(`${firstUrls.adminUrl}/readyz`, 200, 10_000);

  const second = await runToEnd(process.execPath, [MAIN_JS, '--config', b.configFile], {
    cwd: dir,
    env: testEnv(),
    timeoutMs: 10_000,
  });
  assert.equal(second.code, 1, second.stderr);
  assert.equal(second.stdout, '');
  assert.match(
    second.stderr,
    new RegExp(
      `^portaria: invalid configuration:\\n  - revocation\\.file: ${literal(logFile)} is in use by pid ${first.child.pid} on ${literal(hostname())} since \\S+ \\(lock ${literal(lockPathFor(logFile))}\\): two gateways must not share one revocation file; stop the other one or give each its own file\\n$`,
    ),
  );
  assert.equal(
    (await fetch(`${firstUrls.adminUrl}/readyz`)).status,
    200,
    'the first keeps running',
  );

  first.child.kill('SIGTERM');
  assert.deepEqual(await first.exited, { code: 0, signal: null });
  assert.deepEqual(await readdir(dirname(logFile)), ['revocations.log'], 'the lock is removed');
  const next = runGateway(t, ['--config', b.configFile], { cwd: dir });
  await waitForStatus(`${(await next.listening()).adminUrl}/readyz`, 200, 10_000);
  assert.equal(next.child.exitCode, null);
});

test('a lock left by a SIGKILLed gateway does not block the next start', async (t) => {
  const { dir, a, b, logFile } = await twoConfigs(t);
  const killed = runGateway(t, ['--config', a.configFile], { cwd: dir });
  await waitForStatus(`${(await killed.listening()).adminUrl}/readyz`, 200, 10_000);
  killed.child.kill('SIGKILL');
  assert.equal((await killed.exited).signal, 'SIGKILL');
  const left = JSON.parse(await readFile(lockPathFor(logFile), 'utf8')) as { pid: number };
  assert.equal(left.pid, killed.child.pid);

  const next = runGateway(t, ['--config', b.configFile], { cwd: dir });
  await waitForStatus(`${(await next.listening()).adminUrl}/readyz`, 200, 10_000);
  const taken = JSON.parse(await readFile(lockPathFor(logFile), 'utf8')) as { pid: number };
  assert.equal(taken.pid, next.child.pid);
});

test('a gateway with the Redis store does not start on a queueFile another process holds', async (t) => {
  const { dir, b } = await twoConfigs(t);
  const config = JSON.parse(await readFile(b.configFile, 'utf8')) as Record<string, unknown>;
  await writeFile(
    b.configFile,
    JSON.stringify({
      ...config,
      revocation: { store: 'redis' },
      redis: { url: 'redis://127.0.0.1:1' },
    }),
  );
  const queueFile = join(dir, 'data', 'revocations-pending.log');
  const holder = await RevocationQueue.open(queueFile);
  t.after(() => holder.close());

  const refused = await runToEnd(process.execPath, [MAIN_JS, '--config', b.configFile], {
    cwd: dir,
    env: testEnv(),
    timeoutMs: 10_000,
  });
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(
    refused.stderr,
    new RegExp(
      `^portaria: invalid configuration:\\n  - revocation\\.queueFile: ${literal(queueFile)} is in use by pid ${process.pid} on ${literal(hostname())} since \\S+ \\(lock ${literal(lockPathFor(queueFile))}\\): each gateway needs its own queue file\\n$`,
    ),
  );
});
