/**
 * A partner's quota counters read and reset through the admin API
 * (`/admin/v1/quotas/{subject}`) and `portaria quota show|reset`, on a real gateway:
 * the admin token required, the subject validated, a reset letting the partner through.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { CLIENT_ID, type Gateway, startGateway } from '../helpers/fixture.js';
import { runCli, tempDir } from '../helpers/runCli.js';

const ADMIN_TOKEN = 'quota-admin-token-0123456789abcdefghij';

async function setup(t: TestContext): Promise<{ gw: Gateway; tokenFile: string; dir: string }> {
  const dir = await tempDir(t);
  const tokenFile = join(dir, 'admin-token');
  await writeFile(tokenFile, `${ADMIN_TOKEN}\n`);
  const gw = await startGateway(t, {
    settings: (upstream) => ({
      admin: { host: '127.0.0.1', port: 0, tokenFile },
      quotas: {
        policies: {
          daily: { quota: { limit: 2, window: 'day' } },
          burst: { rate: { perSecond: 0.01, burst: 5 }, per: 'client-route' },
        },
      },
      upstream: { default: null },
      routes: [
        { id: 'orders', prefix: '/v1/orders', upstream, quota: 'daily' },
        { id: 'reports', prefix: '/v1/reports', upstream, quota: 'burst' },
      ],
    }),
  });
  return { gw, tokenFile, dir };
}

async function get(gw: Gateway, path: string, token: string): Promise<number> {
  const res = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

const admin = (gw: Gateway, subject: string, init: RequestInit = {}, token = ADMIN_TOKEN) =>
  fetch(`${gw.adminUrl}/admin/v1/quotas/${encodeURIComponent(subject)}`, {
    ...init,
    headers: { authorization: `Bearer ${token}` },
  });

describe('quota admin API and CLI', () => {
  test('GET lists the counters in use, DELETE resets them and the partner passes again', async (t) => {
    const { gw } = await setup(t);
    const token = await gw.token();
    assert.equal(await get(gw, '/v1/orders/1', token), 200);
    assert.equal(await get(gw, '/v1/orders/2', token), 200);
    assert.equal(await get(gw, '/v1/orders/3', token), 429);
    assert.equal(await get(gw, '/v1/reports/1', token), 200);
    const shown = await admin(gw, CLIENT_ID);
    assert.equal(shown.status, 200);
    assert.equal(shown.headers.get('cache-control'), 'no-store');
    const body = (await shown.json()) as { counters: Record<string, unknown>[] };
    const byPolicy = Object.fromEntries(body.counters.map((c) => [c.policy, c])) as Record<
      string,
      { route: string | null; quota: { remaining: number }; rate: { remaining: number } }
    >;
    assert.deepEqual(Object.keys(byPolicy).sort(), ['burst', 'daily']);
    assert.equal(byPolicy.daily?.quota.remaining, 0);
    assert.equal(byPolicy.daily?.route, null);
    assert.equal(byPolicy.burst?.route, 'reports');
    assert.equal(byPolicy.burst?.rate.remaining, 4);

    const reset = await admin(gw, CLIENT_ID, { method: 'DELETE' });
    assert.equal(reset.status, 200);
    assert.deepEqual(await reset.json(), { subject: CLIENT_ID, reset: 3 });
    assert.equal(await get(gw, '/v1/orders/4', token), 200);
    const after = (await (await admin(gw, CLIENT_ID)).json()) as { counters: unknown[] };
    assert.equal(after.counters.length, 1, 'only the counter just used');
  });

  test('refusals: no or a wrong admin token 401, another method 405, a bad subject 400', async (t) => {
    const { gw } = await setup(t);
    const none = await fetch(`${gw.adminUrl}/admin/v1/quotas/acme`);
    assert.equal(none.status, 401);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="portaria-admin"');
    await none.arrayBuffer();
    const wrong = await admin(gw, CLIENT_ID, {}, 'not-the-admin-token');
    assert.equal(wrong.status, 401);
    await wrong.arrayBuffer();
    const post = await admin(gw, CLIENT_ID, { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD, DELETE');
    await post.arrayBuffer();
    const empty = await fetch(`${gw.adminUrl}/admin/v1/quotas/`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(empty.status, 400);
    await empty.arrayBuffer();
    const spaced = await admin(gw, 'a b');
    assert.equal(spaced.status, 400);
    await spaced.arrayBuffer();
  });

  test('portaria quota show and reset, with the admin token from a file (never printed)', async (t) => {
    const { gw, tokenFile, dir } = await setup(t);
    const token = await gw.token();
    assert.equal(await get(gw, '/v1/orders/1', token), 200);
    const options = ['--admin-url', gw.adminUrl, '--token-file', tokenFile];
    const show = await runCli(['quota', 'show', CLIENT_ID, ...options], { cwd: dir });
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /POLICY\s+ROUTE\s+PART\s+REMAINING\s+RESET/);
    assert.match(show.stdout, /daily\s+\*\s+quota\s+1\/2\s+\d+s/);
    const json = await runCli(['quota', 'show', CLIENT_ID, '-o', 'json', ...options], { cwd: dir });
    assert.equal(json.code, 0, json.stderr);
    assert.equal((JSON.parse(json.stdout) as { policy: string }[])[0]?.policy, 'daily');
    const reset = await runCli(['quota', 'reset', CLIENT_ID, ...options], { cwd: dir });
    assert.equal(reset.code, 0, reset.stderr);
    assert.match(reset.stdout, /Reset 3 quota counter\(s\) of acme\./);
    const empty = await runCli(['quota', 'show', CLIENT_ID, ...options], { cwd: dir });
    assert.match(empty.stdout, /No quota counter of acme in use\./);
    for (const r of [show, json, reset, empty]) {
      assert.ok(!r.stdout.includes(ADMIN_TOKEN) && !r.stderr.includes(ADMIN_TOKEN));
    }
    const usage = await runCli(['quota', 'show', ...options], { cwd: dir });
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /missing <SUBJECT>/);
    const wrong = await runCli(['quota', 'shwo', CLIENT_ID], { cwd: dir });
    assert.equal(wrong.code, 2);
  });
});
