/**
 * Per-partner quotas on API routes (docs/quotas.md), one gateway with the local store: a
 * real upstream, real tokens, the RateLimit fields parsed by `structured-headers` (an
 * RFC 9651 parser written by others), the window's rollover on an injected clock.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { describe, type TestContext, test } from 'node:test';
import { parseList } from 'structured-headers';
import { ManualClock } from '../../src/lib/clock.js';
import {
  type ClientSpec,
  DEFAULT_CLIENTS,
  type Gateway,
  problemOf,
  startGateway,
} from '../helpers/fixture.js';
import { metric } from '../helpers/metrics.js';
import { accessLineOf, parsedLogs, waitFor } from '../helpers/wait.js';

type Items = Record<string, Record<string, unknown>>;

/** A RateLimit or RateLimit-Policy field as `{item: {param: value}}` (every item a String). */
function fieldOf(res: Response, name: string): Items | null {
  const value = res.headers.get(name);
  if (value === null) return null;
  const items: Items = {};
  for (const [item, params] of parseList(value)) {
    assert.equal(typeof item, 'string', `${name}: ${String(item)} is a String item`);
    items[item as string] = Object.fromEntries(params);
  }
  return items;
}

interface Options {
  readonly policies: Record<string, unknown>;
  readonly clients?: ClientSpec[];
  readonly clock?: ManualClock;
  readonly headers?: 'always' | 'refusals' | 'off';
  readonly configFile?: boolean;
  readonly routes?: (upstream: string) => Record<string, unknown>[];
}

async function meteredGateway(t: TestContext, options: Options): Promise<Gateway> {
  return startGateway(t, {
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.clients === undefined ? {} : { clients: options.clients }),
    ...(options.configFile === true ? { configFile: true } : {}),
    settings: (upstream) => ({
      quotas: { policies: options.policies, headers: options.headers ?? 'always' },
      upstream: { default: null },
      routes: options.routes?.(upstream) ?? [
        { id: 'orders', prefix: '/v1/orders', upstream, quota: 'standard' },
        { id: 'payments', prefix: '/v1/payments', upstream, quota: 'standard' },
        { id: 'open', prefix: '/v1/open', upstream },
      ],
    }),
  });
}

async function get(gw: Gateway, path: string, token: string): Promise<Response> {
  const res = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res;
}

describe('quotas', () => {
  test('exactly the limit of 12 parallel requests pass; the rest get 429 quota-exceeded before the upstream, with Retry-After and the fields', async (t) => {
    const gw = await meteredGateway(t, {
      policies: { standard: { quota: { limit: 5, window: 'day' } } },
    });
    const token = await gw.token();
    const answers = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const res = await fetch(`${gw.url}/v1/orders/${i}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        return { res, body: res.status === 429 ? await problemOf(res) : await res.text() };
      }),
    );
    const statuses = answers.map((a) => a.res.status).sort();
    assert.deepEqual(statuses, [...Array(5).fill(200), ...Array(7).fill(429)]);
    assert.equal(gw.upstream.received.length, 5, 'refused requests never reached the upstream');
    const refused = answers.find((a) => a.res.status === 429) as (typeof answers)[number];
    const problem = refused.body as Record<string, unknown>;
    assert.equal(problem.tipo, 'urn:portaria:problem:quota-exceeded');
    const retryAfter = Number(refused.res.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 86_400, `Retry-After ${retryAfter}`);
    const limit = fieldOf(refused.res, 'ratelimit') as Items;
    assert.equal(limit['standard-quota']?.r, 0);
    assert.equal(limit['standard-quota']?.t, retryAfter);
    const policy = fieldOf(refused.res, 'ratelimit-policy') as Items;
    assert.equal(policy['standard-quota']?.q, 5);
    assert.equal(policy['standard-quota']?.w, 86_400);
    // The allowed answers count down: r = 4, 3, 2, 1, 0 in some order.
    const remaining = answers
      .filter((a) => a.res.status === 200)
      .map((a) => (fieldOf(a.res, 'ratelimit') as Items)['standard-quota']?.r)
      .sort();
    assert.deepEqual(remaining, [0, 1, 2, 3, 4]);
    const line = await accessLineOf(gw.logs, refused.res.headers.get('x-request-id') as string);
    assert.equal(line['portaria.quota.policy'], 'standard');
    assert.equal(line['portaria.quota.outcome'], 'refused');
    assert.equal(line['portaria.reason'], 'quota-window');
    assert.equal(
      await metric(
        gw.adminUrl,
        'portaria_quota_decisions_total{policy="standard",route="orders",outcome="refused"}',
      ),
      7,
    );
  });

  test('one partner’s counters span its routes (per: client), another partner has its own; an unmetered route is not counted', async (t) => {
    const gw = await meteredGateway(t, {
      policies: { standard: { quota: { limit: 2, window: 'hour' } } },
    });
    const acme = await gw.token();
    const reader = await gw.token('reader', DEFAULT_CLIENTS[1]?.secret);
    assert.equal((await get(gw, '/v1/orders/1', acme)).status, 200);
    assert.equal((await get(gw, '/v1/payments/1', acme)).status, 200);
    assert.equal((await get(gw, '/v1/payments/2', acme)).status, 429);
    const open = await get(gw, '/v1/open/1', acme);
    assert.equal(open.status, 200);
    assert.equal(open.headers.get('ratelimit'), null);
    assert.equal((await get(gw, '/v1/orders/1', reader)).status, 200);
  });

  test('per: client-route keeps a counter per route; a token bucket refuses past its burst and refills', async (t) => {
    const clock = new ManualClock(Date.now());
    const gw = await meteredGateway(t, {
      clock,
      policies: { standard: { rate: { perSecond: 1, burst: 2 }, per: 'client-route' } },
    });
    const token = await gw.token();
    assert.equal((await get(gw, '/v1/orders/1', token)).status, 200);
    assert.equal((await get(gw, '/v1/orders/2', token)).status, 200);
    const drained = await get(gw, '/v1/orders/3', token);
    assert.equal(drained.status, 429);
    assert.equal(drained.headers.get('retry-after'), '1');
    assert.equal((fieldOf(drained, 'ratelimit') as Items)['standard-rate']?.r, 0);
    assert.equal((fieldOf(drained, 'ratelimit-policy') as Items)['standard-rate']?.q, 2);
    assert.equal(
      (await get(gw, '/v1/payments/1', token)).status,
      200,
      'another route, its own bucket',
    );
    clock.advance(1000);
    assert.equal((await get(gw, '/v1/orders/4', token)).status, 200, 'one token back after 1 s');
    assert.equal((await get(gw, '/v1/orders/5', token)).status, 429);
  });

  test('the window rolls over at midnight in the policy’s time zone (injected clock)', async (t) => {
    // 23:59:30 in São Paulo (UTC-3) on 2026-06-01.
    const clock = new ManualClock(Date.UTC(2026, 5, 2, 2, 59, 30));
    const gw = await meteredGateway(t, {
      clock,
      policies: {
        standard: { quota: { limit: 1, window: 'day', timeZone: 'America/Sao_Paulo' } },
      },
    });
    const token = await gw.token();
    assert.equal((await get(gw, '/v1/orders/1', token)).status, 200);
    const spent = await get(gw, '/v1/orders/2', token);
    assert.equal(spent.status, 429);
    assert.equal(spent.headers.get('retry-after'), '30');
    clock.advance(30_000);
    assert.equal((await get(gw, '/v1/orders/3', token)).status, 200, 'a new day in São Paulo');
  });

  test('a client’s own policy overrides the route’s; a claim can name the partner', async (t) => {
    const clients: ClientSpec[] = [
      { ...(DEFAULT_CLIENTS[0] as ClientSpec), extra: { quota: 'gold' } },
      DEFAULT_CLIENTS[1] as ClientSpec,
    ];
    const gw = await meteredGateway(t, {
      clients,
      policies: {
        standard: { quota: { limit: 1, window: 'day' } },
        gold: { quota: { limit: 3, window: 'day' } },
      },
    });
    const gold = await gw.token();
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(gw, `/v1/orders/${i}`, gold)).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    const reader = await gw.token('reader', DEFAULT_CLIENTS[1]?.secret);
    assert.equal((await get(gw, '/v1/orders/1', reader)).status, 200);
    assert.equal((await get(gw, '/v1/orders/2', reader)).status, 429);
  });

  test('quotas.headers: refusals puts the fields on 429s only; off on none', async (t) => {
    for (const headers of ['refusals', 'off'] as const) {
      const gw = await meteredGateway(t, {
        headers,
        policies: { standard: { quota: { limit: 1, window: 'minute' } } },
      });
      const token = await gw.token();
      const allowed = await get(gw, '/v1/orders/1', token);
      assert.equal(allowed.status, 200);
      assert.equal(allowed.headers.get('ratelimit'), null);
      const refused = await get(gw, '/v1/orders/2', token);
      assert.equal(refused.status, 429);
      assert.ok(refused.headers.get('retry-after'));
      assert.equal(refused.headers.get('ratelimit') !== null, headers === 'refusals', headers);
    }
  });

  test('a reload that changes the policies keeps the counters', async (t) => {
    const gw = await meteredGateway(t, {
      configFile: true,
      policies: { standard: { quota: { limit: 2, window: 'day' } } },
    });
    const token = await gw.token();
    assert.equal((await get(gw, '/v1/orders/1', token)).status, 200);
    assert.equal((await get(gw, '/v1/orders/2', token)).status, 200);
    assert.equal((await get(gw, '/v1/orders/3', token)).status, 429);
    const config = JSON.parse(await readFile(gw.configFile as string, 'utf8'));
    config.quotas.policies.standard.quota.limit = 3;
    await writeFile(gw.configFile as string, JSON.stringify(config));
    await gw.app.reload();
    const after = await get(gw, '/v1/orders/4', token);
    assert.equal(after.status, 200, 'the third of three, the two before still counted');
    assert.equal((fieldOf(after, 'ratelimit') as Items)['standard-quota']?.r, 0);
    assert.equal((await get(gw, '/v1/orders/5', token)).status, 429);
  });

  test('the first policies need a restart: a reload into a gateway started without any says so, and meters nothing', async (t) => {
    const gw = await meteredGateway(t, {
      configFile: true,
      policies: {},
      routes: (upstream) => [{ id: 'orders', prefix: '/v1/orders', upstream }],
    });
    const token = await gw.token();
    const config = JSON.parse(await readFile(gw.configFile as string, 'utf8'));
    config.quotas.policies = { standard: { quota: { limit: 1, window: 'day' } } };
    config.routes[0].quota = 'standard';
    await writeFile(gw.configFile as string, JSON.stringify(config));
    await gw.app.reload();
    const warned = await waitFor('the restart warning', () =>
      parsedLogs(gw.logs).find((l) => l.msg === 'these settings change only on restart'),
    );
    assert.deepEqual(warned.settings, ['quotas.policies']);
    for (const id of [1, 2]) {
      const res = await get(gw, `/v1/orders/${id}`, token);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('ratelimit'), null);
    }
  });

  test('a route or a client naming a policy that does not exist stops the start, naming it', async (t) => {
    await assert.rejects(
      meteredGateway(t, {
        policies: { other: { quota: { limit: 1, window: 'day' } } },
      }),
      /routes\[0\]\.quota: no policy "standard" in quotas\.policies/,
    );
    await assert.rejects(
      meteredGateway(t, {
        clients: [{ ...(DEFAULT_CLIENTS[0] as ClientSpec), extra: { quota: 'platinum' } }],
        policies: { standard: { quota: { limit: 1, window: 'day' } } },
      }),
      /client acme: quota "platinum" is not in quotas\.policies/,
    );
    await assert.rejects(
      meteredGateway(t, {
        policies: { standard: { quota: { limit: 1, window: 'day', timeZone: 'Mars/Olympus' } } },
      }),
      /quotas\.policies\.standard\.quota\.timeZone: "Mars\/Olympus" is not an IANA time zone/,
    );
    await assert.rejects(
      meteredGateway(t, { policies: { standard: {} } }),
      /quotas\.policies\.standard: needs a rate, a quota or both/,
    );
  });
});
