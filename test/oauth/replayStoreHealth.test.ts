/**
 * The client-assertion replay store's Redis connection (`oauth.replayStore: redis`) is
 * reported as the revocation store's is: `portaria_redis_connected{role="replay"}` and
 * `/readyz`. With only that Redis down, the replica stays ready (degraded): assertion
 * clients get 503, every other client its token. A real redis-server, stopped and
 * started again mid-test.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import {
  type ClientSpec,
  DEFAULT_CLIENTS,
  type Gateway,
  startGateway,
} from '../helpers/fixture.js';
import { ecKey } from '../helpers/jwksServer.js';
import { metric } from '../helpers/metrics.js';
import { readyz, redisConfig } from '../helpers/redisFixtures.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { waitFor } from '../helpers/wait.js';
import {
  assertionClient,
  assertionForm,
  signedAssertion,
  writeClientKeys,
} from './clientAssertions.js';
import { basic, postForm } from './formRequests.js';

const KEY = ecKey('health-signer');
const CLIENTS: ClientSpec[] = [...DEFAULT_CLIENTS, assertionClient('signer')];
const REPLAY = 'portaria_redis_connected{role="replay"}';

async function gatewayOn(
  t: TestContext,
  redis: RedisServer,
  revocation: Record<string, unknown>,
): Promise<Gateway> {
  const gw = await startGateway(t, {
    clients: CLIENTS,
    settings: () => ({ revocation, oauth: { replayStore: 'redis' }, redis: redisConfig(redis) }),
  });
  await writeClientKeys(gw, 'signer', KEY);
  return gw;
}

async function assertionStatus(gw: Gateway): Promise<number> {
  const form = assertionForm(await signedAssertion('signer', KEY));
  const res = await postForm(gw, '/oauth2/token', form);
  await res.arrayBuffer();
  return res.status;
}

async function secretStatus(gw: Gateway): Promise<number> {
  const res = await postForm(gw, '/oauth2/token', { grant_type: 'client_credentials' }, basic());
  await res.arrayBuffer();
  return res.status;
}

test('only the replay store on Redis: its connection in portaria_redis_connected{role="replay"} and /readyz; down, the replica stays ready (degraded) and only assertion clients are refused', async (t) => {
  const redis = await startRedis(t);
  const gw = await gatewayOn(t, redis, { store: 'memory' });
  assert.equal(await metric(gw.adminUrl, REPLAY), 1);
  assert.deepEqual(await readyz(gw.adminUrl), { status: 200, body: { status: 'ready' } });
  assert.equal(await assertionStatus(gw), 200);

  await redis.stop();
  await waitFor(
    'the replay connection reported down',
    async () => ((await metric(gw.adminUrl, REPLAY)) === 0 ? true : undefined),
    20_000,
  );
  const down = await readyz(gw.adminUrl);
  assert.equal(down.status, 200, 'an outage of the replay store does not take the replica out');
  assert.equal(down.body.status, 'ready');
  assert.match(String(down.body.degraded), /replay store.*private_key_jwt clients are refused/);
  assert.equal(await assertionStatus(gw), 503, 'assertions fail closed');
  assert.equal(await secretStatus(gw), 200, 'secret clients are unaffected');
  assert.ok((await gw.token()).length > 0, "the contract's operation is unaffected");

  await redis.start();
  await waitFor(
    'the replay connection back',
    async () => ((await metric(gw.adminUrl, REPLAY)) === 1 ? true : undefined),
    20_000,
  );
  assert.deepEqual(await readyz(gw.adminUrl), { status: 200, body: { status: 'ready' } });
  assert.equal(await assertionStatus(gw), 200);
});

test('revocation and replay on one Redis: both reported, each under its role, both reasons in degraded', async (t) => {
  const redis = await startRedis(t);
  const gw = await gatewayOn(t, redis, { store: 'redis', maxSyncLagSeconds: 1 });
  assert.equal(gw.config.oauth.replayStore, 'redis');
  assert.equal(await metric(gw.adminUrl, REPLAY), 1);
  assert.equal(await metric(gw.adminUrl, 'portaria_redis_connected{role="revocation"}'), 1);

  await redis.stop();
  const degraded = await waitFor(
    'both outages in /readyz',
    async () => {
      const ready = await readyz(gw.adminUrl);
      const text = String(ready.body.degraded);
      return /revocation list stale/.test(text) && /replay store/.test(text) ? ready : undefined;
    },
    20_000,
  );
  assert.equal(degraded.status, 200);
  assert.equal(await metric(gw.adminUrl, REPLAY), 0);
  assert.equal(await metric(gw.adminUrl, 'portaria_redis_connected{role="revocation"}'), 0);
});

test('the local replay store has no Redis connection to report', async (t) => {
  const redis = await startRedis(t);
  const gw = await startGateway(t, {
    settings: () => ({ oauth: { replayStore: 'local' }, redis: redisConfig(redis) }),
  });
  assert.equal(await metric(gw.adminUrl, REPLAY), undefined);
  assert.deepEqual(await readyz(gw.adminUrl), { status: 200, body: { status: 'ready' } });
});
