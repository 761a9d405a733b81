/**
 * Two real gateway processes (`main.js --config`) sharing one real `redis-server`, each
 * with its own ports and admin listener, the same keys and clients (replicas): a
 * revocation made through one replica's admin API is enforced by the other within 1 s.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { decodeJwt } from 'jose';
import { startUpstream } from '../helpers/fixture.js';
import {
  type GatewayFiles,
  runGateway,
  tempDir,
  waitForStatus,
  writeGatewayFiles,
} from '../helpers/process.js';
import {
  callWith,
  issueToken,
  refusedAsRevoked,
  revokeVia,
  writeAdminToken,
} from '../helpers/redisFixtures.js';
import { startRedis } from '../helpers/redisServer.js';

const CLIENT = 'acme';
const SECRET = 'acme-redis-secret-0123456789abcdefghijklmnop';

/** Replica B: replica A's config (port 0 too), keys and clients from A's directory. */
async function secondReplica(t: TestContext, a: GatewayFiles, aDir: string) {
  const dir = await tempDir(t, 'portaria-replica-b-');
  const config = JSON.parse(await readFile(a.configFile, 'utf8')) as Record<string, unknown>;
  const configFile = join(dir, 'portaria.yaml');
  await writeFile(
    configFile,
    JSON.stringify({
      ...config,
      keys: { dir: join(aDir, 'keys') },
      clients: { file: join(aDir, 'clients.json') },
    }),
  );
  return { dir, configFile };
}

test('a token revoked through replica A is refused by replica B within 1 s, and a client cut-off through B by A', async (t) => {
  const redis = await startRedis(t);
  const upstream = await startUpstream(t);
  const aDir = await tempDir(t, 'portaria-replica-a-');
  const aFiles = await writeGatewayFiles(aDir, [[CLIENT, SECRET, ['orders:read']]], {
    upstream: { default: { upstream: upstream.url } },
    revocation: { store: 'redis' },
    redis: { url: redis.url },
  });
  const bFiles = await secondReplica(t, aFiles, aDir);
  const env = { PORTARIA_ADMIN_TOKEN_FILE: await writeAdminToken(aDir) };
  const procA = runGateway(t, ['--config', aFiles.configFile], { cwd: aDir, env });
  const procB = runGateway(t, ['--config', bFiles.configFile], { cwd: bFiles.dir, env });
  const [a, b] = await Promise.all([procA.listening(), procB.listening()]);
  await Promise.all([
    waitForStatus(`${a.adminUrl}/readyz`, 200, 10_000),
    waitForStatus(`${b.adminUrl}/readyz`, 200, 10_000),
  ]);

  const token = await issueToken(a.publicUrl, CLIENT, SECRET);
  assert.equal((await callWith(b.publicUrl, token)).status, 200);
  assert.equal((await callWith(a.publicUrl, token)).status, 200);

  const revoked = await revokeVia(a.adminUrl, { jti: decodeJwt(token).jti });
  assert.equal(revoked.status, 201);
  const elapsed = await refusedAsRevoked(b.publicUrl, token, 2000);
  assert.ok(elapsed < 1000, `replica B refused the token after ${Math.round(elapsed)} ms`);
  assert.equal((await callWith(a.publicUrl, token)).code, 'token-revoked');

  // The other way round, by client cut-off: every token of the client issued so far.
  const second = await issueToken(b.publicUrl, CLIENT, SECRET);
  assert.equal((await callWith(a.publicUrl, second)).status, 200);
  assert.equal((await revokeVia(b.adminUrl, { clientId: CLIENT })).status, 201);
  const cutElapsed = await refusedAsRevoked(a.publicUrl, second, 2000);
  assert.ok(cutElapsed < 1000, `replica A refused the client after ${Math.round(cutElapsed)} ms`);

  for (const proc of [procA, procB]) {
    proc.child.kill('SIGTERM');
    assert.equal((await proc.exited).code, 0);
    assert.doesNotMatch(
      proc.stdout() + proc.stderr(),
      /"level":"(error|fatal)"/,
      'no error logged',
    );
  }
});
