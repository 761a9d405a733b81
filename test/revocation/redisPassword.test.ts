/**
 * A Redis that requires a password (`requirepass`): the gateway process reads it from
 * `redis.passwordFile`, synchronises and revokes through it, and the password appears in
 * no log line — neither when it works nor when it is wrong.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import { createRedisClient } from '../../src/redis/redisClient.js';
import { revocationKeys } from '../../src/revocation/redisRevocationLayout.js';
import { startUpstream } from '../helpers/fixture.js';
import { runGateway, tempDir, waitForStatus, writeGatewayFiles } from '../helpers/process.js';
import {
  callWith,
  issueToken,
  REDIS_DEFAULTS,
  readyz,
  revokeVia,
  writeAdminToken,
} from '../helpers/redisFixtures.js';
import { startRedis } from '../helpers/redisServer.js';
import { waitFor } from '../helpers/wait.js';

const PASSWORD = 'redis-pass-Zq8vW3kT9xL2mN7p';
const CLIENT = 'acme';
const SECRET = 'acme-redis-secret-0123456789abcdefghijklmnop';

async function gatewayWithPassword(
  t: Parameters<typeof tempDir>[0],
  url: string,
  password: string,
) {
  const upstream = await startUpstream(t);
  const dir = await tempDir(t, 'portaria-redis-auth-');
  await writeFile(join(dir, 'redis-password'), `${password}\n`, { mode: 0o600 });
  const { configFile } = await writeGatewayFiles(dir, [[CLIENT, SECRET, ['orders:read']]], {
    upstream: { default: { upstream: upstream.url } },
    revocation: { store: 'redis' },
    redis: { url, passwordFile: 'redis-password', connectTimeoutMs: 500 },
    log: { level: 'debug' },
  });
  const env = { PORTARIA_ADMIN_TOKEN_FILE: await writeAdminToken(dir) };
  const proc = runGateway(t, ['--config', configFile], { cwd: dir, env });
  return { files: { configFile, ...(await proc.listening()) }, proc };
}

test('the Redis password comes from redis.passwordFile and never reaches a log line', async (t) => {
  const redis = await startRedis(t, { password: PASSWORD });
  const { files, proc } = await gatewayWithPassword(t, redis.url, PASSWORD);
  await waitForStatus(`${files.adminUrl}/readyz`, 200, 10_000);

  const token = await issueToken(files.publicUrl, CLIENT, SECRET);
  const jti = decodeJwt(token).jti as string;
  assert.equal((await revokeVia(files.adminUrl, { jti })).status, 201);
  assert.equal((await callWith(files.publicUrl, token)).code, 'token-revoked');

  const raw = createRedisClient(
    {
      ...REDIS_DEFAULTS,
      url: redis.url,
      passwordFile: join(files.configFile, '..', 'redis-password'),
      keyPrefix: 'portaria:',
      connectTimeoutMs: 500,
      commandTimeoutMs: 500,
    },
    { role: 'test', offlineQueue: true },
  );
  t.after(() => raw.disconnect());
  assert.notEqual(await raw.zscore(revocationKeys('portaria:').tokens, jti), null);

  proc.child.kill('SIGTERM');
  assert.equal((await proc.exited).code, 0);
  const output = proc.stdout() + proc.stderr();
  assert.match(output, /revocation list synchronised/);
  assert.ok(!output.includes(PASSWORD), 'the password is in the output');
});

test('a wrong Redis password leaves the gateway running but not ready, and is not logged either', async (t) => {
  const redis = await startRedis(t, { password: PASSWORD });
  const wrong = 'wrong-pass-Hk4rT8bN2vC6xZ1q';
  const { files, proc } = await gatewayWithPassword(t, redis.url, wrong);
  await waitForStatus(`${files.adminUrl}/healthz`, 200, 10_000);
  const ready = await readyz(files.adminUrl);
  assert.equal(ready.status, 503);
  assert.match(String(ready.body.reason), /revocation list has not been loaded/);
  await proc.waitForOutput('stdout', /redis connection failed/);
  await waitFor('a log line names the refusal', () =>
    /WRONGPASS|NOAUTH|invalid username-password/.test(proc.stdout()) ? true : undefined,
  );

  proc.child.kill('SIGTERM');
  assert.equal((await proc.exited).code, 0);
  const output = proc.stdout() + proc.stderr();
  assert.ok(!output.includes(wrong), 'the wrong password is in the output');
  assert.ok(!output.includes(PASSWORD), 'the password is in the output');
});
