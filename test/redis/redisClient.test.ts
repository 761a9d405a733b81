/**
 * `createRedisClient` against real `redis-server`s: an ACL user whose password is in a
 * file (the user in the URL or in `redis.username`), and TLS with a CA, a client
 * certificate and a server name, refused with a CA that did not sign the server's
 * certificate or without the name. Files are named in problems, never shown.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import type { RedisConfig } from '../../src/config/types.js';
import { createRedisClient } from '../../src/redis/redisClient.js';
import { tempDir } from '../helpers/process.js';
import { REDIS_DEFAULTS, redisConfig } from '../helpers/redisFixtures.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { makeTlsFiles, SERVER_NAME, type TlsFiles } from './tlsFiles.js';

const PASSWORD = 'gw-pass-Vb7Qm2Lx9Tk4Rz8N';

async function aclServer(t: TestContext): Promise<{ redis: RedisServer; passwordFile: string }> {
  const dir = await tempDir(t, 'portaria-redis-acl-');
  const passwordFile = join(dir, 'redis-password');
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  const redis = await startRedis(t, {
    config: ['user default off', `user gw on >${PASSWORD} ~portaria:* &portaria:* +@all`],
  });
  return { redis, passwordFile };
}

async function whoAmI(t: TestContext, config: RedisConfig): Promise<unknown> {
  const client = createRedisClient(config, { role: 'test' });
  t.after(() => client.disconnect());
  await client.connect();
  return client.call('ACL', 'WHOAMI');
}

/** Connects once (no reconnection) and returns the error that stopped it. */
async function refusal(t: TestContext, config: RedisConfig): Promise<string> {
  const client = createRedisClient(config, { role: 'test' });
  t.after(() => client.disconnect());
  const errors: string[] = [];
  client.on('error', (error: Error) =>
    errors.push(`${(error as { code?: string }).code} ${error.message}`),
  );
  await assert.rejects(client.connect());
  client.disconnect();
  return errors.join('\n');
}

test('an ACL user named in the URL with its password in redis.passwordFile connects as that user', async (t) => {
  const { redis, passwordFile } = await aclServer(t);
  const url = `redis://gw@127.0.0.1:${redis.port}`;
  assert.equal(await whoAmI(t, redisConfig(url, { passwordFile })), 'gw');
});

test('an ACL user in redis.username with its password in redis.passwordFile connects as that user', async (t) => {
  const { redis, passwordFile } = await aclServer(t);
  assert.equal(await whoAmI(t, redisConfig(redis, { username: 'gw', passwordFile })), 'gw');
});

async function tlsServer(t: TestContext): Promise<{ redis: RedisServer; files: TlsFiles }> {
  const files = makeTlsFiles(await tempDir(t, 'portaria-redis-tls-'));
  const redis = await startRedis(t, {
    tls: {
      certFile: files.serverCert,
      keyFile: files.serverKey,
      caFile: files.caFile,
      authClients: true,
    },
  });
  return { redis, files };
}

function tlsConfig(redis: RedisServer, tls: Partial<RedisConfig['tls']>): RedisConfig {
  return redisConfig(redis, { tls: { ...REDIS_DEFAULTS.tls, ...tls } });
}

test('TLS with the CA file, a client certificate and the server name connects', async (t) => {
  const { redis, files } = await tlsServer(t);
  assert.match(redis.url, /^rediss:/);
  const config = tlsConfig(redis, {
    caFile: files.caFile,
    certFile: files.clientCert,
    keyFile: files.clientKey,
    serverName: SERVER_NAME,
  });
  assert.equal(await whoAmI(t, config), 'default');
});

test('TLS trusting a CA that did not sign the server certificate is refused', async (t) => {
  const { redis, files } = await tlsServer(t);
  const error = await refusal(
    t,
    tlsConfig(redis, {
      caFile: files.otherCaFile,
      certFile: files.clientCert,
      keyFile: files.clientKey,
      serverName: SERVER_NAME,
    }),
  );
  assert.match(error, /UNABLE_TO_VERIFY_LEAF_SIGNATURE|unable to verify|self.signed/i);
});

test('TLS without the server name the certificate holds is refused (127.0.0.1 is not in it)', async (t) => {
  const { redis, files } = await tlsServer(t);
  const error = await refusal(
    t,
    tlsConfig(redis, {
      caFile: files.caFile,
      certFile: files.clientCert,
      keyFile: files.clientKey,
    }),
  );
  assert.match(error, /ERR_TLS_CERT_ALTNAME_INVALID/);
});

test('an unreadable TLS or password file is a configuration problem naming the setting and the file', () => {
  const missing = '/nonexistent/portaria-test/ca.pem';
  assert.throws(
    () =>
      createRedisClient(
        redisConfig('rediss://127.0.0.1:6390', { tls: { ...REDIS_DEFAULTS.tls, caFile: missing } }),
        { role: 'test' },
      ),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.problems.join() === `redis.tls.caFile: cannot read ${missing} (ENOENT)`,
  );
});
