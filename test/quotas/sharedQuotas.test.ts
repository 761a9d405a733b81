/**
 * Quotas as they are deployed: a group of workers counting in their primary, two gateways
 * (replicas) counting in one real Redis — exactly M of N parallel requests pass — and Redis
 * stopped mid-test, with `quotas.whenRedisDown` open (through, counted) and closed (503),
 * never a hang.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import {
  ADMIN_TOKEN,
  send,
  startGroup,
  startUpstream,
  tokenFor,
  waitForLines,
} from '../cluster/groupGateway.js';
import { type Gateway, problemOf, startGateway } from '../helpers/fixture.js';
import { metric } from '../helpers/metrics.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { accessLineOf, waitFor } from '../helpers/wait.js';

const DAILY = { quota: { limit: 15, window: 'day' } };

async function redisGateway(
  t: TestContext,
  redis: RedisServer,
  whenRedisDown: 'open' | 'closed' = 'open',
  keysDir?: string,
): Promise<Gateway> {
  return startGateway(t, {
    settings: (upstream) => ({
      // A second replica signs and verifies with the first one's keys.
      ...(keysDir === undefined ? {} : { keys: { dir: keysDir } }),
      redis: { url: redis.url, commandTimeoutMs: 500 },
      quotas: { store: 'redis', whenRedisDown, policies: { daily: DAILY } },
      upstream: { default: null },
      routes: [{ id: 'orders', prefix: '/v1/orders', upstream, quota: 'daily' }],
    }),
  });
}

async function get(url: string, token: string): Promise<Response> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res;
}

/** Two workers, everything under `upstream.default` metered by `daily` (10 a day), and a token. */
async function meteredGroup(t: TestContext) {
  const upstream = await startUpstream(t);
  const group = await startGroup(t, 2, {
    upstream: { default: { upstream: upstream.url, quota: 'daily' } },
    quotas: { policies: { daily: { quota: { limit: 10, window: 'day' } } } },
  });
  const token = JSON.parse((await tokenFor(group)).body).token_de_acesso as string;
  return { upstream, group, token };
}

describe('shared quotas', () => {
  test('a group of two workers counts in its primary: 10 of 30 parallel requests pass, and the other worker refuses too', {
    timeout: 60_000,
  }, async (t) => {
    const { group, token } = await meteredGroup(t);
    const request = () =>
      send(`${group.files.publicUrl}/v1/orders/1`, {
        headers: { authorization: `Bearer ${token}` },
      });
    const burst = await Promise.all(Array.from({ length: 30 }, request));
    const statuses = burst.map((a) => a.status);
    assert.equal(statuses.filter((s) => s === 200).length, 10, statuses.join(' '));
    assert.equal(statuses.filter((s) => s === 429).length, 20);
    // Fresh connections until both workers have answered a metered request (bounded): a
    // worker counting on its own would let its first one through.
    const workers = () =>
      new Set(
        group
          .lines()
          .filter((l) => l['portaria.quota.policy'] === 'daily')
          .map((l) => l.worker),
      );
    const after: number[] = [];
    while (workers().size < 2 && after.length < 60) after.push((await request()).status);
    assert.equal(workers().size, 2, 'both workers answered metered requests');
    assert.ok(
      after.every((s) => s === 429),
      after.join(' '),
    );
  });

  test("a group's admin quota API sees the policies and routes its workers reloaded", {
    timeout: 60_000,
  }, async (t) => {
    const { upstream, group, token } = await meteredGroup(t);
    const file = group.files.configFile;
    const config = JSON.parse(await readFile(file, 'utf8'));
    config.quotas.policies.hourly = { quota: { limit: 5, window: 'hour' }, per: 'client-route' };
    config.routes = [
      { id: 'reports', prefix: '/v1/reports', upstream: upstream.url, quota: 'hourly' },
    ];
    await writeFile(file, JSON.stringify(config));
    group.child.kill('SIGHUP');
    await waitForLines(
      group,
      'every worker reloaded its routes',
      (l) => l.msg === 'reloaded' && l.source === 'routes',
      2,
    );
    const res = await send(`${group.files.publicUrl}/v1/reports/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 200);
    const admin = (method: string) =>
      send(`${group.files.adminUrl}/admin/v1/quotas/acme`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
    const shown = JSON.parse((await admin('GET')).body) as {
      counters: { policy: string; route: string | null; quota: { remaining: number } }[];
    };
    assert.deepEqual(
      shown.counters.map((c) => [c.policy, c.route, c.quota.remaining]),
      [['hourly', 'reports', 4]],
    );
    const reset = await admin('DELETE');
    assert.equal(reset.status, 200, reset.body);
    const after = JSON.parse((await admin('GET')).body) as { counters: unknown[] };
    assert.deepEqual(after.counters, []);
  });

  test('two gateways on one Redis: exactly 15 of 40 parallel requests pass, spread over both', {
    timeout: 60_000,
  }, async (t) => {
    const redis = await startRedis(t);
    const a = await redisGateway(t, redis);
    const b = await redisGateway(t, redis, 'open', join(a.dir, 'keys'));
    const token = await a.token();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => get(`${(i % 2 ? a : b).url}/v1/orders/${i}`, token)),
    );
    const passed = answers.filter((r) => r.status === 200).length;
    assert.equal(passed, 15);
    assert.equal(
      answers.filter((r) => r.status === 429).length,
      25,
      answers.map((r) => r.status).join(' '),
    );
    assert.equal(a.upstream.received.length + b.upstream.received.length, 15);
  });

  test('Redis stopped mid-test, whenRedisDown open: requests pass (unavailable-open, counted), metering resumes when it is back', {
    timeout: 60_000,
  }, async (t) => {
    const redis = await startRedis(t);
    const gw = await redisGateway(t, redis, 'open');
    const token = await gw.token();
    assert.equal((await get(`${gw.url}/v1/orders/1`, token)).status, 200);
    await redis.stop();
    const started = Date.now();
    const during = await get(`${gw.url}/v1/orders/2`, token);
    assert.ok(Date.now() - started < 5000, 'answered within the command timeout, no hang');
    assert.equal(during.status, 200);
    assert.equal(during.headers.get('ratelimit'), null, 'no reading: no fields');
    const line = await accessLineOf(gw.logs, during.headers.get('x-request-id') as string);
    assert.equal(line['portaria.quota.outcome'], 'unavailable-open');
    assert.equal(
      await metric(
        gw.adminUrl,
        'portaria_quota_decisions_total{policy="daily",route="orders",outcome="unavailable-open"}',
      ),
      1,
    );
    assert.equal(await metric(gw.adminUrl, 'portaria_redis_connected{role="quota"}'), 0);
    await redis.start();
    const back = await waitFor(
      'metering again',
      async () => {
        const res = await get(`${gw.url}/v1/orders/3`, token);
        return res.headers.get('ratelimit') === null ? undefined : res;
      },
      15_000,
      200,
    );
    assert.equal(back.status, 200);
  });

  test('Redis stopped, whenRedisDown closed: 503 service-unavailable (quota-store-unavailable), never reaching the upstream', {
    timeout: 60_000,
  }, async (t) => {
    const redis = await startRedis(t);
    const gw = await redisGateway(t, redis, 'closed');
    const token = await gw.token();
    assert.equal((await get(`${gw.url}/v1/orders/1`, token)).status, 200);
    await redis.stop();
    const res = await fetch(`${gw.url}/v1/orders/2`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 503);
    assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:service-unavailable');
    assert.equal(res.headers.get('retry-after'), '1');
    const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') as string);
    assert.equal(line['portaria.reason'], 'quota-store-unavailable');
    assert.equal(line['portaria.quota.outcome'], 'unavailable-closed');
    assert.equal(gw.upstream.received.length, 1);
  });
});
