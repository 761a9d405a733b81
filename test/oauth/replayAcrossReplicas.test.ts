/**
 * Two gateways sharing one real redis-server (`oauth.replayStore` follows
 * `revocation.store: redis`): a client assertion accepted by one replica is refused by
 * the other, and of the same assertion sent to both at once exactly one is accepted.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { type ClientSpec, type Gateway, startGateway } from '../helpers/fixture.js';
import { ecKey } from '../helpers/jwksServer.js';
import { redisConfig } from '../helpers/redisFixtures.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { accessLineOf } from '../helpers/wait.js';
import {
  assertionClient,
  assertionForm,
  signedAssertion,
  writeClientKeys,
} from './clientAssertions.js';

const KEY = ecKey('replica-signer');
const CLIENTS: ClientSpec[] = [assertionClient('signer')];

async function replica(t: TestContext, redis: RedisServer): Promise<Gateway> {
  const gw = await startGateway(t, {
    clients: CLIENTS,
    settings: () => ({ revocation: { store: 'redis' }, redis: redisConfig(redis) }),
  });
  assert.equal(gw.config.oauth.replayStore, 'redis');
  await writeClientKeys(gw, 'signer', KEY);
  return gw;
}

async function assertionBody(): Promise<string> {
  return new URLSearchParams(assertionForm(await signedAssertion('signer', KEY))).toString();
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
