/**
 * Two gateways sharing one real redis-server (`oauth.replayStore` follows
 * `revocation.store: redis`): a client assertion accepted by one replica is refused by
 * the other, and of the same assertion sent to both at once exactly one is accepted.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { SignJWT } from 'jose';
import { JWT_BEARER_ASSERTION } from '../../src/oauth/clientAssertion.js';
import { type ClientSpec, type Gateway, startGateway } from '../helpers/fixture.js';
import { ecKey } from '../helpers/jwksServer.js';
import { redisConfig } from '../helpers/redisFixtures.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { accessLineOf } from '../helpers/wait.js';

const KEY = ecKey('replica-signer');
const CLIENTS: ClientSpec[] = [
  {
    id: 'signer',
    secret: '',
    scopes: ['orders:read'],
    extra: { authMethods: ['private_key_jwt'], jwksFile: 'signer.jwks.json' },
  },
];

async function replica(t: TestContext, redis: RedisServer): Promise<Gateway> {
  const gw = await startGateway(t, {
    clients: CLIENTS,
    settings: () => ({ revocation: { store: 'redis' }, redis: redisConfig(redis) }),
  });
  assert.equal(gw.config.oauth.replayStore, 'redis');
  await writeFile(join(gw.dir, 'signer.jwks.json'), JSON.stringify({ keys: [KEY.jwk] }));
  return gw;
}

async function assertionBody(): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = await new SignJWT({
    iss: 'signer',
    sub: 'signer',
    aud: 'https://portaria.test/oauth2/token',
    jti: crypto.randomUUID(),
    exp: now + 60,
  })
    .setProtectedHeader({ alg: 'ES256', kid: KEY.kid })
    .sign(KEY.privateKey);
  return new URLSearchParams({
    grant_type: 'client_credentials',
    client_assertion_type: JWT_BEARER_ASSERTION,
    client_assertion: jwt,
  }).toString();
}

async function send(gw: Gateway, body: string): Promise<number> {
  const res = await fetch(`${gw.url}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

test('an assertion used at one replica is refused at the other', async (t) => {
  const redis = await startRedis(t);
  const [a, b] = [await replica(t, redis), await replica(t, redis)];
  const body = await assertionBody();
  assert.equal(await send(a, body), 200);
  assert.equal(await send(b, body), 401);
  assert.equal(await send(a, body), 401);
});

test('the same assertion sent to both replicas at once is accepted once', async (t) => {
  const redis = await startRedis(t);
  const [a, b] = [await replica(t, redis), await replica(t, redis)];
  for (let i = 0; i < 5; i++) {
    const body = await assertionBody();
    const statuses = await Promise.all([send(a, body), send(b, body)]);
    assert.deepEqual(statuses.sort(), [200, 401]);
  }
});

test('with Redis down, assertions are refused with 503 (never accepted unchecked)', async (t) => {
  const redis = await startRedis(t);
  const a = await replica(t, redis);
  await redis.stop();
  const res = await fetch(`${a.url}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: await assertionBody(),
  });
  assert.equal(res.status, 503);
  assert.equal(res.headers.get('retry-after'), '1');
  await res.arrayBuffer();
  const line = await accessLineOf(a.logs, res.headers.get('x-request-id') as string);
  assert.equal(line['portaria.reason'], 'replay-store-unavailable');
});
