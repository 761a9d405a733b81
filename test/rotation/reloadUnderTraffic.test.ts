/**
 * Hot reload while traffic flows: a bounded loop of concurrent loopback requests (each
 * must answer 200) runs while the clients file, the keys directory and the config
 * file's routes change underneath the gateway, and while a broken clients file is
 * written and fixed. Also client-secret rotation with an overlap (ManualClock), and
 * SIGHUP on the real process.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  addClient,
  readClientsFile,
  rotateClientSecret,
  writeClientsFile,
} from '../../src/clients/clientsFile.js';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { rotateKeys } from '../../src/keys/rotateKeys.js';
import { ManualClock } from '../../src/lib/clock.js';
import { replaceAtomically } from '../helpers/files.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type Gateway,
  startGateway,
  startUpstream,
  TOKEN_PATH,
} from '../helpers/fixture.js';
import { metric, sample, scrape } from '../helpers/metrics.js';
import { runGateway, tempDir, waitForStatus, writeGatewayFiles } from '../helpers/process.js';
import { parsedLogs, waitFor } from '../helpers/wait.js';

const SECOND = 1000;
const T0 = Date.UTC(2026, 4, 1, 8);

const newSecret = () => randomBytes(32).toString('base64url');

/** Status of a token request; the token when it succeeded. */
async function requestToken(
  baseUrl: string,
  clientId: string,
  clientSecret: string,
): Promise<{ status: number; token?: string }> {
  const res = await fetch(baseUrl + TOKEN_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, clientSecret }),
  });
  const body = (await res.json()) as Record<string, unknown>;
  return res.status === 200
    ? { status: 200, token: body.token_de_acesso as string }
    : { status: res.status };
}

async function get(baseUrl: string, path: string, token: string): Promise<number> {
  const res = await fetch(baseUrl + path, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

/** Waits (bounded) until `clientId` can get a token; returns it. */
function tokenOnceAccepted(baseUrl: string, clientId: string, secret: string): Promise<string> {
  return waitFor(
    `a token for ${clientId}`,
    async () => (await requestToken(baseUrl, clientId, secret)).token,
    3000,
    25,
  );
}

interface Traffic {
  /** Responses received so far (token requests and route calls). */
  readonly done: () => number;
  /** Stops the workers and resolves with every failure seen. */
  stop(): Promise<{ total: number; failures: string[] }>;
}

/**
 * `workers` concurrent loops, each at most `maxRequests` iterations or `maxMs`: a GET
 * through the `orders` route with a valid token, and every tenth iteration a fresh token
 * from the token operation. Anything but 200 (or a network error) is a failure.
 */
function startTraffic(gw: Gateway, workers = 8, maxRequests = 400, maxMs = 8000): Traffic {
  let stopped = false;
  let total = 0;
  const failures: string[] = [];
  const deadline = performance.now() + maxMs;
  const loop = async (w: number) => {
    let token = '';
    for (let i = 0; i < maxRequests && !stopped && performance.now() < deadline; i++) {
      try {
        if (i % 10 === 0) {
          const got = await requestToken(gw.url, CLIENT_ID, CLIENT_SECRET);
          total++;
          if (got.token === undefined) {
            failures.push(`worker ${w} #${i}: token ${got.status}`);
            continue;
          }
          token = got.token;
        }
        const status = await get(gw.url, `/v1/orders/${w}-${i}`, token);
        total++;
        if (status !== 200) failures.push(`worker ${w} #${i}: GET ${status}`);
      } catch (error) {
        total++;
        failures.push(`worker ${w} #${i}: ${(error as Error).message}`);
      }
      await sleep(5); // pacing, so the bounded loop spans every change below
    }
  };
  const running = Promise.all(Array.from({ length: workers }, (_, w) => loop(w)));
  return {
    done: () => total,
    async stop() {
      stopped = true;
      await running;
      return { total, failures };
    },
  };
}

async function publishedKids(gw: Gateway): Promise<string[]> {
  const res = await fetch(`${gw.url}/.well-known/jwks.json`);
  return ((await res.json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
}

describe('hot reload under traffic', () => {
  test('clients, keys and routes change and a broken clients file comes and goes: zero failed requests', async (t) => {
    const clock = new ManualClock(T0);
    const first = await startUpstream(t);
    const second = await startUpstream(t);
    const gw = await startGateway(t, {
      clock,
      upstream: first,
      configFile: true,
      settings: (url) => ({
        routes: [
          { id: 'orders', prefix: '/v1/orders', upstream: url },
          { id: 'legacy', prefix: '/v1/legacy', upstream: url },
        ],
        upstream: { default: null },
        reload: { pollIntervalMs: 100 },
      }),
    });
    const configFile = gw.configFile as string;
    const clientsFile = gw.config.clients.file;
    const acme = await gw.token();
    assert.equal(await get(gw.url, '/v1/reports/1', acme), 404);

    const traffic = startTraffic(gw);
    const overlapped: Record<string, number> = {};
    const step = async (name: string, change: () => Promise<void>) => {
      const before = traffic.done();
      await change();
      overlapped[name] = traffic.done() - before;
    };

    // 1. A client is added (atomic write); its credentials work without a restart.
    const newbieSecret = newSecret();
    await step('client added', async () => {
      await addClient(clientsFile, {
        id: 'newbie',
        secrets: [{ hash: hashGeneratedSecret(newbieSecret) }],
        scopes: ['orders:read'],
      });
      const token = await tokenOnceAccepted(gw.url, 'newbie', newbieSecret);
      assert.equal(await get(gw.url, '/v1/orders/newbie', token), 200);
    });

    // 2. A key rotation in the keys directory: the new key is published.
    await step('keys rotated', async () => {
      const rotation = await rotateKeys(gw.config.keys.dir, {
        algorithm: 'ES256',
        now: new Date(clock.now()),
        jwksMaxAgeSeconds: 300,
        clockSkewSeconds: 60,
        maxLifetimeSeconds: 3600,
      });
      await waitFor(
        'the new key in the JWKS',
        async () => ((await publishedKids(gw)).includes(rotation.added.kid) ? true : undefined),
        3000,
        25,
      );
    });

    // 3. Routes change: a new route to a second upstream, a prefix moved.
    await step('routes changed', async () => {
      const settings = JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>;
      settings.routes = [
        { id: 'orders', prefix: '/v1/orders', upstream: first.url },
        { id: 'legacy', prefix: '/v2/legacy', upstream: first.url },
        { id: 'reports', prefix: '/v1/reports', upstream: second.url },
      ];
      await replaceAtomically(configFile, JSON.stringify(settings, null, 2));
      await waitFor(
        'the reports route',
        async () => ((await get(gw.url, '/v1/reports/1', acme)) === 200 ? true : undefined),
        3000,
        25,
      );
      assert.ok(second.received.some((r) => r.url === '/v1/reports/1'));
      assert.ok(!first.received.some((r) => r.url.startsWith('/v1/reports')));
      assert.equal(await get(gw.url, '/v2/legacy/1', acme), 200);
      assert.ok(first.received.some((r) => r.url === '/v2/legacy/1'));
      assert.equal(await get(gw.url, '/v1/legacy/1', acme), 404);
    });

    // 4. A broken clients file: refused, counted, logged; the previous clients keep working.
    const failed = 'portaria_config_reload_total{source="clients",outcome="failed"}';
    const lastOk = 'portaria_config_last_reload_successful{source="clients"}';
    // Both series exist from the start (an alert's increase() sees the first failure).
    assert.equal(await metric(gw.adminUrl, failed), 0);
    assert.equal(await metric(gw.adminUrl, lastOk), 1);
    const previous = await readClientsFile(clientsFile);
    await step('clients file broken', async () => {
      await replaceAtomically(clientsFile, '{"clients": [ {"id": "half-writ');
      await waitFor(
        'the failed clients reload',
        async () => ((await metric(gw.adminUrl, failed)) === 1 ? true : undefined),
        3000,
        25,
      );
      const line = parsedLogs(gw.logs).find(
        (l) =>
          l.msg === 'reload failed: keeping the previous configuration' && l.source === 'clients',
      );
      assert.ok(line, 'the failed reload is logged');
      assert.equal(line.level, 'error');
      const problems = line.problems as string[];
      assert.ok(Array.isArray(problems) && problems.length > 0);
      assert.match(problems.join('\n'), /not valid JSON/);
      assert.equal((await requestToken(gw.url, CLIENT_ID, CLIENT_SECRET)).status, 200);
      assert.equal((await requestToken(gw.url, 'newbie', newbieSecret)).status, 200);
      assert.equal(await metric(gw.adminUrl, lastOk), 0, 'the source reports its failed state');
    });

    // 5. Fixed again (with one more client): applied.
    const fixedSecret = newSecret();
    await step('clients file fixed', async () => {
      await writeClientsFile(clientsFile, {
        clients: [
          ...previous.clients,
          {
            id: 'fixed',
            secrets: [{ hash: hashGeneratedSecret(fixedSecret) }],
            scopes: ['orders:read'],
          },
        ],
      });
      await tokenOnceAccepted(gw.url, 'fixed', fixedSecret);
      assert.equal(await metric(gw.adminUrl, lastOk), 1);
    });

    const { total, failures } = await traffic.stop();
    t.diagnostic(`${total} requests; during each change: ${JSON.stringify(overlapped)}`);
    assert.deepEqual(failures, [], `${failures.length} of ${total} requests failed`);
    for (const [name, count] of Object.entries(overlapped)) {
      assert.ok(count > 0, `traffic flowed while: ${name}`);
    }
    assert.ok(total >= 100, `only ${total} requests`);
    assert.equal(await metric(gw.adminUrl, failed), 1, 'a broken file is reported once');
    assert.ok(
      ((await metric(
        gw.adminUrl,
        'portaria_config_reload_total{source="routes",outcome="applied"}',
      )) ?? 0) >= 1,
    );
  });

  test('a clients file in the keys directory (as the chart mounts them) reloads clients only', async (t) => {
    const gw = await startGateway(t, {
      clientsFile: 'keys/clients.json',
      settings: () => ({ reload: { pollIntervalMs: 100 } }),
    });
    const token = await gw.token();
    assert.equal(await get(gw.url, '/v1/orders/1', token), 200); // now cached
    const reloads = async (source: string) =>
      sample(
        await scrape(gw.adminUrl),
        `portaria_config_reload_total{source="${source}",outcome="applied"}`,
      ) ?? 0;
    const misses = async () =>
      sample(await scrape(gw.adminUrl), 'portaria_verify_cache_lookups_total{result="miss"}');
    const missesBefore = await misses();

    const newbie = newSecret();
    await addClient(gw.config.clients.file, {
      id: 'newbie',
      secrets: [{ hash: hashGeneratedSecret(newbie) }],
      scopes: ['orders:read'],
    });
    await tokenOnceAccepted(gw.url, 'newbie', newbie);
    await sleep(300); // three more polls of the keys directory
    assert.equal(await reloads('clients'), 1);
    assert.equal(await reloads('keys'), 0, 'the keys did not change');
    assert.equal(await get(gw.url, '/v1/orders/1', token), 200);
    assert.equal(await misses(), missesBefore, 'the cached token stayed cached');
  });

  test('a rotated client secret: both work during the overlap, only the new one after it', async (t) => {
    const clock = new ManualClock(T0);
    const gw = await startGateway(t, { clock, settings: () => ({ reload: { enabled: false } }) });
    const clientsFile = gw.config.clients.file;
    const rotated = newSecret();
    const result = await rotateClientSecret(clientsFile, CLIENT_ID, {
      hash: hashGeneratedSecret(rotated),
      nowMs: clock.now(),
      overlapMs: 3600 * SECOND,
    });
    assert.deepEqual(result.kept, [
      new Date(T0 + 3600 * SECOND).toISOString().replace('.000Z', 'Z'),
    ]);
    assert.equal((await requestToken(gw.url, CLIENT_ID, rotated)).status, 401, 'before the reload');

    await gw.app.reload();
    const both = [CLIENT_SECRET, rotated];
    for (const secret of both) {
      const got = await requestToken(gw.url, CLIENT_ID, secret);
      assert.equal(got.status, 200);
      assert.equal(await get(gw.url, '/v1/orders/1', got.token as string), 200);
    }

    clock.set(T0 + 3600 * SECOND - 1);
    for (const secret of both) {
      assert.equal((await requestToken(gw.url, CLIENT_ID, secret)).status, 200);
    }

    clock.set(T0 + 3600 * SECOND + 1);
    assert.equal((await requestToken(gw.url, CLIENT_ID, CLIENT_SECRET)).status, 401);
    const got = await requestToken(gw.url, CLIENT_ID, rotated);
    assert.equal(got.status, 200);
    assert.equal(await get(gw.url, '/v1/orders/1', got.token as string), 200);
  });

  test('SIGHUP reloads the clients file of the real process, which keeps running', async (t) => {
    const upstream = await startUpstream(t);
    const dir = await tempDir(t, 'portaria-sighup-');
    const secret = newSecret();
    const { configFile } = await writeGatewayFiles(dir, [['acme', secret, ['orders:read']]], {
      reload: { enabled: false },
      upstream: { default: { upstream: upstream.url } },
      log: { level: 'info' },
    });
    const proc = runGateway(t, ['--config', configFile], { cwd: dir });
    const files = await proc.listening();
    await waitForStatus(`${files.adminUrl}/readyz`, 200);

    const newbieSecret = newSecret();
    assert.equal((await requestToken(files.publicUrl, 'newbie', newbieSecret)).status, 401);
    await addClient(join(dir, 'clients.json'), {
      id: 'newbie',
      secrets: [{ hash: hashGeneratedSecret(newbieSecret) }],
      scopes: ['orders:read'],
    });
    assert.equal(
      (await requestToken(files.publicUrl, 'newbie', newbieSecret)).status,
      401,
      'reload.enabled false: nothing reloads before the signal',
    );

    assert.ok(proc.child.kill('SIGHUP'));
    const token = await tokenOnceAccepted(files.publicUrl, 'newbie', newbieSecret);
    assert.equal(await get(files.publicUrl, '/v1/orders/1', token), 200);
    await proc.waitForOutput(
      'stdout',
      /"source":"clients".*"msg":"reloaded"|"msg":"reloaded".*"source":"clients"/,
    );

    // A second signal with nothing changed: still alive, still serving.
    assert.ok(proc.child.kill('SIGHUP'));
    await waitFor(
      'the second SIGHUP to be handled',
      () => (proc.stdout().match(/signal received: reloading/g)?.length === 2 ? true : undefined),
      3000,
      20,
    );
    assert.equal(proc.child.exitCode, null);
    assert.equal(proc.child.signalCode, null);
    await waitForStatus(`${files.adminUrl}/healthz`, 200, 1000);
    assert.equal((await requestToken(files.publicUrl, 'acme', secret)).status, 200);
  });
});
