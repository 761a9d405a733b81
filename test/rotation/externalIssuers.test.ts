/**
 * Trusted external issuers through the whole gateway: a real loopback JWKS server that
 * counts requests, a ManualClock for every freshness decision (cooldown, max age,
 * staleness), and real requests to the public and admin listeners. Nothing sleeps for a
 * schedule time; the only real-time waits are bounded polls for the key set's retry.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { replaceAtomically } from '../helpers/files.js';
import { type Gateway, problemOf, startGateway } from '../helpers/fixture.js';
import { forceGcEvery } from '../helpers/forcedGc.js';
import {
  ecKey,
  hang,
  jwksOf,
  serve,
  startJwksServer,
  type TestKey,
  within,
} from '../helpers/jwksServer.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { metric, sample, scrape } from '../helpers/metrics.js';
import { waitForStatus } from '../helpers/process.js';
import { signWith } from '../helpers/tokens.js';
import { waitFor } from '../helpers/wait.js';

const PARTNER_ISS = 'https://idp.partner.test';
const LOOSE_ISS = 'https://idp.loose.test';
const FILES_ISS = 'https://idp.files.test';
const AUDIENCE = 'portaria-test';
const SECOND = 1000;
const COOLDOWN_S = 30;
const MAX_AGE_S = 600;
const STALENESS_S = 3600;

function partnerIssuer(jwksUri: string, extra: Record<string, unknown> = {}) {
  return {
    id: 'partner',
    issuer: PARTNER_ISS,
    jwksUri,
    audiences: [AUDIENCE],
    algorithms: ['ES256', 'RS256'],
    cooldownSeconds: COOLDOWN_S,
    cacheMaxAgeSeconds: MAX_AGE_S,
    maxStalenessSeconds: STALENESS_S,
    ...extra,
  };
}

/** A gateway trusting the given issuers; reloads only on `app.reload()`. */
function startWithIssuers(
  t: TestContext,
  clock: ManualClock,
  issuers: Record<string, unknown>[],
): Promise<Gateway> {
  return startGateway(t, { clock, settings: () => ({ issuers, reload: { enabled: false } }) });
}

function claims(
  clock: ManualClock,
  iss: string,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const now = Math.floor(clock.now() / 1000);
  return {
    iss,
    sub: 'partner-app',
    client_id: 'partner-app',
    aud: AUDIENCE,
    iat: now,
    nbf: now,
    exp: now + 600,
    jti: randomUUID(),
    scope: 'orders:read',
    ...overrides,
  };
}

/** A token signed by `key` (ES256, typ at+jwt unless `header` says otherwise). */
function tokenOf(
  key: TestKey,
  clock: ManualClock,
  iss = PARTNER_ISS,
  overrides: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  return signWith(key.privateKey, 'ES256', claims(clock, iss, overrides), {
    kid: key.kid,
    ...header,
  });
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A well-formed token naming `kid`, with a signature nobody made (the kid is looked up first). */
function unknownKidToken(clock: ManualClock, kid: string): string {
  const header = b64({ alg: 'ES256', typ: 'at+jwt', kid });
  return `${header}.${b64(claims(clock, PARTNER_ISS))}.${randomBytes(64).toString('base64url')}`;
}

function call(gw: Gateway, token: string, path = '/v1/orders/1'): Promise<Response> {
  return fetch(gw.url + path, { headers: { authorization: `Bearer ${token}` } });
}

async function expectStatus(gw: Gateway, token: string, status: number, tipo?: string) {
  const res = await call(gw, token);
  if (res.status !== status) {
    assert.fail(`expected ${status}, got ${res.status}: ${await res.text()}`);
  }
  if (tipo === undefined) {
    await res.arrayBuffer();
    return;
  }
  const problem = await problemOf(res);
  assert.equal(problem.tipo, `urn:portaria:problem:${tipo}`);
  assert.equal(problem.status, status);
}

async function ready(gw: Gateway): Promise<void> {
  await waitForStatus(`${gw.adminUrl}/readyz`, 200, 3000);
}

/** Runs `task(i)` for i < count with at most `concurrency` at a time. */
async function bounded(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

async function partnerSetup(t: TestContext) {
  const clock = new ManualClock(Date.UTC(2026, 2, 1));
  const k1 = ecKey('partner-2026-1');
  const jwks = await startJwksServer(t, serve(jwksOf(k1)));
  const gw = await startWithIssuers(t, clock, [partnerIssuer(jwks.url)]);
  await ready(gw);
  assert.equal(jwks.count(), 1, 'one startup fetch');
  return { clock, k1, jwks, gw };
}

describe('trusted external issuers at the gateway', () => {
  test('a partner token is forwarded; wrong iss, aud, alg or typ is refused without fetching', async (t) => {
    const clock = new ManualClock(Date.UTC(2026, 2, 1));
    const k1 = ecKey('partner-2026-1');
    const loose = ecKey('loose-1');
    const jwks = await startJwksServer(t, serve(jwksOf(k1)));
    const looseJwks = await startJwksServer(t, serve(jwksOf(loose)));
    const gw = await startWithIssuers(t, clock, [
      partnerIssuer(jwks.url),
      {
        id: 'loose',
        issuer: LOOSE_ISS,
        jwksUri: looseJwks.url,
        audiences: [AUDIENCE],
        requireTyp: false,
      },
    ]);
    await ready(gw);
    assert.equal(jwks.count(), 1);

    const res = await call(gw, await tokenOf(k1, clock));
    assert.equal(res.status, 200, await res.text());
    const seen = gw.upstream.received.at(-1);
    assert.equal(seen?.headers['x-client-id'], 'partner-app');
    assert.equal(seen?.headers['x-token-scope'], 'orders:read');

    // An unknown iss is refused before any key is looked up: no request to any key server.
    await expectStatus(
      gw,
      await tokenOf(k1, clock, 'https://idp.unknown.test'),
      401,
      'token-invalid',
    );
    await expectStatus(
      gw,
      await tokenOf(ecKey('other-kid'), clock, 'https://idp.unknown.test'),
      401,
      'token-invalid',
    );
    // Our own tokens are verified from the key ring in memory.
    await expectStatus(gw, await gw.token(), 200);
    // The partner's key, but an audience it is not trusted for.
    await expectStatus(gw, await tokenOf(k1, clock, PARTNER_ISS, { aud: 'other-api' }), 401);
    // EdDSA is one of our algorithms but not one of the partner's.
    const ed = newKeyPair('ed25519').privateKey;
    const edToken = await signWith(ed, 'EdDSA', claims(clock, PARTNER_ISS), { kid: 'ed-1' });
    await expectStatus(gw, edToken, 401, 'token-invalid');
    // typ: the partner requires at+jwt (the default); the loose issuer does not.
    await expectStatus(
      gw,
      await tokenOf(k1, clock, PARTNER_ISS, {}, { typ: 'JWT' }),
      401,
      'token-invalid',
    );
    await expectStatus(gw, await tokenOf(loose, clock, LOOSE_ISS, {}, { typ: 'JWT' }), 200);
    assert.equal(jwks.count(), 1, 'no refusal above fetched the partner key set');
    assert.equal(looseJwks.count(), 1);

    const text = await scrape(gw.adminUrl);
    assert.equal(
      sample(text, 'portaria_jwks_fetches_total{issuer="partner",trigger="startup",outcome="ok"}'),
      1,
    );
    assert.equal(sample(text, 'portaria_jwks_keys{issuer="partner"}'), 1);
    assert.equal(sample(text, 'portaria_jwks_keys{issuer="loose"}'), 1);
  });

  test('a partner token with a Unicode or control-character sub reaches the upstream percent-encoded', async (t) => {
    const { k1, clock, gw } = await partnerSetup(t);
    for (const [sub, clientId, expected] of [
      ['用户-1', 'partner-app', '%E7%94%A8%E6%88%B7-1'],
      ['user\r\nX-Admin: 1', 'partner-app', 'user%0D%0AX-Admin: 1'],
      ['cliënt-ü-✓', undefined, 'cli%C3%ABnt-%C3%BC-%E2%9C%93'],
    ] as const) {
      const res = await call(
        gw,
        await tokenOf(k1, clock, PARTNER_ISS, { sub, client_id: clientId }),
      );
      assert.equal(res.status, 200, await res.text());
      const seen = gw.upstream.received.at(-1)?.headers;
      assert.equal(seen?.['x-client-id'], expected);
      assert.equal(decodeURIComponent(expected), sub);
      assert.equal(seen?.['x-admin'], undefined);
    }
    // A client id (client_id, else sub) that no revocation could name is refused.
    for (const overrides of [
      { client_id: 'a\u0085' },
      { client_id: undefined, sub: '客'.repeat(86) },
    ]) {
      await expectStatus(gw, await tokenOf(k1, clock, PARTNER_ISS, overrides), 401);
    }
  });

  test('1,000 random unknown kids cause at most one fetch per cooldown', async (t) => {
    const { clock, jwks, gw } = await partnerSetup(t);
    const kids = () => `rnd-${randomBytes(8).toString('hex')}`;
    const statuses = new Map<number, number>();
    const run = () =>
      bounded(1000, 50, async () => {
        const res = await call(gw, unknownKidToken(clock, kids()));
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      });

    // Right after the startup fetch: inside the cooldown, no fetch at all.
    await run();
    assert.deepEqual([...statuses], [[401, 1000]]);
    assert.equal(jwks.count(), 1, 'within the cooldown of the startup fetch');

    // Past the cooldown: one fetch for all of them together.
    clock.advance((COOLDOWN_S + 1) * SECOND);
    statuses.clear();
    await run();
    assert.deepEqual([...statuses], [[401, 1000]]);
    assert.equal(jwks.count(), 2, 'exactly one fetch after the cooldown');
    assert.equal(
      await metric(
        gw.adminUrl,
        'portaria_jwks_fetches_total{issuer="partner",trigger="unknown-kid",outcome="ok"}',
      ),
      1,
    );
  });

  test('a rotation at the issuer is picked up on the first token with the new kid after the cooldown', async (t) => {
    const { clock, k1, jwks, gw } = await partnerSetup(t);
    await expectStatus(gw, await tokenOf(k1, clock), 200);
    const k2 = ecKey('partner-2026-2');
    jwks.behaviour = serve(jwksOf(k2, k1));

    // Inside the cooldown of the startup fetch, the new kid is not fetched for.
    await expectStatus(gw, await tokenOf(k2, clock), 401, 'token-invalid');
    assert.equal(jwks.count(), 1);

    clock.advance((COOLDOWN_S + 1) * SECOND);
    await expectStatus(gw, await tokenOf(k2, clock), 200);
    assert.equal(jwks.count(), 2, 'one fetch for the new kid');
    await expectStatus(gw, await tokenOf(k2, clock), 200);
    await expectStatus(gw, await tokenOf(k1, clock), 200);
    assert.equal(jwks.count(), 2, 'known kids need no fetch');
    assert.equal(await metric(gw.adminUrl, 'portaria_jwks_keys{issuer="partner"}'), 2);
  });

  test('a key the issuer removed stops verifying at once, even for a token verified before', async (t) => {
    const { clock, k1, jwks, gw } = await partnerSetup(t);
    const before = await tokenOf(k1, clock, PARTNER_ISS, {
      exp: Math.floor(clock.now() / 1000) + 3600,
    });
    await expectStatus(gw, before, 200);
    const k2 = ecKey('partner-2026-2');
    jwks.behaviour = serve(jwksOf(k2)); // k1 withdrawn (e.g. compromised)
    clock.advance((COOLDOWN_S + 1) * SECOND);
    await expectStatus(gw, await tokenOf(k2, clock), 200);
    assert.equal(jwks.count(), 2);
    await expectStatus(gw, await tokenOf(k1, clock), 401, 'token-invalid');
    // As for our own keys and key files: a kid that left the set must not keep verifying
    // through the verified-token cache.
    await expectStatus(gw, before, 401, 'token-invalid');
  });

  test('a key replaced under the same kid: tokens of the old key stop verifying, cached or not', async (t) => {
    const { clock, k1, jwks, gw } = await partnerSetup(t);
    const before = await tokenOf(k1, clock, PARTNER_ISS, {
      exp: Math.floor(clock.now() / 1000) + 3600,
    });
    await expectStatus(gw, before, 200); // verified and cached
    const replacement = ecKey('partner-2026-1'); // same kid, new key (after a compromise)
    jwks.behaviour = serve(jwksOf(replacement));
    // The set's max age passes; the next lookup (an uncached token) refetches it.
    clock.advance((MAX_AGE_S + 1) * SECOND);
    await (await call(gw, await tokenOf(k1, clock))).arrayBuffer();
    await waitFor('the refetch', () => (jwks.count() === 2 ? true : undefined));
    await expectStatus(gw, before, 401, 'token-invalid');
    await expectStatus(gw, await tokenOf(replacement, clock), 200);
  });

  test('an outage inside max age + max staleness loses no request; past it, 503 issuer-unavailable', async (t) => {
    const { clock, k1, jwks, gw } = await partnerSetup(t);
    await expectStatus(gw, await tokenOf(k1, clock), 200);
    await jwks.stop();

    // Walk through the whole window (fresh, then stale); every request still succeeds.
    const usableMs = (MAX_AGE_S + STALENESS_S) * SECOND;
    for (const at of [MAX_AGE_S * SECOND - 1, MAX_AGE_S * SECOND + 1, usableMs / 2, usableMs - 1]) {
      clock.set(Date.UTC(2026, 2, 1) + at);
      await bounded(20, 5, async () => {
        await expectStatus(gw, await tokenOf(k1, clock), 200);
      });
    }
    assert.equal(await readyz(gw), 200, 'stale but usable keys keep the gateway ready');

    clock.set(Date.UTC(2026, 2, 1) + usableMs + SECOND);
    const res = await call(gw, await tokenOf(k1, clock));
    assert.equal(res.status, 503);
    const problem = await problemOf(res);
    assert.equal(problem.tipo, 'urn:portaria:problem:issuer-unavailable');
    assert.equal(res.headers.get('www-authenticate'), null, 'not an authentication failure');
    // Our own tokens do not depend on the partner's key server.
    await expectStatus(gw, await gw.token(), 200);
    // One partner's outage after start-up does not take the replica out of the load
    // balancer: its tokens get 503, readiness stays 200.
    assert.equal(await readyz(gw), 200, 'a later issuer outage keeps the gateway ready');
  });

  test('while the key server hangs, an unknown kid is refused at the fetch deadline, valid tokens pass at once and the set is fetched again', async (t) => {
    forceGcEvery(t);
    const clock = new ManualClock(Date.UTC(2026, 2, 1));
    const k1 = ecKey('partner-2026-1');
    const jwks = await startJwksServer(t, serve(jwksOf(k1)));
    const gw = await startWithIssuers(t, clock, [partnerIssuer(jwks.url, { fetchTimeoutMs: 500 })]);
    await ready(gw);
    jwks.behaviour = hang();
    clock.advance(COOLDOWN_S * SECOND);
    const started = performance.now();
    const pending = call(gw, unknownKidToken(clock, 'partner-2026-2'));
    await waitFor(
      'the download to reach the key server',
      () => (jwks.count() >= 2 ? true : undefined),
      5000,
    );
    await expectStatus(gw, await tokenOf(k1, clock), 200);
    const res = await within(pending, 5000, 'the unknown-kid request');
    assert.equal(res.status, 401);
    assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:token-invalid');
    assert.ok(performance.now() - started < 4000, 'the fetch deadline bounds the wait');
    clock.advance(MAX_AGE_S * SECOND);
    await expectStatus(gw, await tokenOf(k1, clock), 200);
    await waitFor('a later download', () => (jwks.count() >= 3 ? true : undefined), 8000);
  });

  test('readiness waits for a usable key set: 503 while the key server is down, 200 once it is up', async (t) => {
    const clock = new ManualClock(Date.UTC(2026, 2, 1));
    const k1 = ecKey('partner-2026-1');
    const jwks = await startJwksServer(t, serve(jwksOf(k1)));
    await jwks.stop();
    const gw = await startWithIssuers(t, clock, [partnerIssuer(jwks.url)]);

    const res = await fetch(`${gw.adminUrl}/readyz`);
    assert.equal(res.status, 503);
    assert.match(((await res.json()) as { reason: string }).reason, /partner/);
    await expectStatus(gw, await tokenOf(k1, clock), 503, 'issuer-unavailable');
    await expectStatus(gw, await gw.token(), 200);

    // The key set retries with backoff (first retry after 0.5-1 s of real time).
    await jwks.restart();
    await waitForStatus(`${gw.adminUrl}/readyz`, 200, 6000);
    await expectStatus(gw, await tokenOf(k1, clock), 200);
    const text = await scrape(gw.adminUrl);
    assert.equal(
      sample(
        text,
        'portaria_jwks_fetches_total{issuer="partner",trigger="startup",outcome="error"}',
      ),
      1,
    );
    assert.equal(sample(text, 'portaria_jwks_keys{issuer="partner"}'), 1);
  });

  test('a keyFile issuer verifies from its file and picks up a change on reload', async (t) => {
    const clock = new ManualClock(Date.UTC(2026, 2, 1));
    const dir = await mkdtemp(join(tmpdir(), 'portaria-issuer-file-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'files-idp.jwks.json');
    const l1 = ecKey('files-1');
    const l2 = ecKey('files-2');
    await replaceAtomically(file, JSON.stringify(jwksOf(l1)));
    const gw = await startWithIssuers(t, clock, [
      { id: 'files', issuer: FILES_ISS, keyFile: file, audiences: [AUDIENCE], requireTyp: false },
    ]);
    await ready(gw);

    const first = await tokenOf(l1, clock, FILES_ISS, {}, { typ: 'JWT' });
    await expectStatus(gw, first, 200);
    await expectStatus(gw, await tokenOf(l2, clock, FILES_ISS), 401, 'token-invalid');

    await replaceAtomically(file, JSON.stringify(jwksOf(l2)));
    await expectStatus(gw, await tokenOf(l2, clock, FILES_ISS), 401, 'token-invalid');
    await gw.app.reload();
    await expectStatus(gw, await tokenOf(l2, clock, FILES_ISS), 200);
    // The removed key stops verifying at once, even for a token verified (and cached) before.
    await expectStatus(gw, first, 401, 'token-invalid');
    await expectStatus(gw, await tokenOf(l1, clock, FILES_ISS), 401, 'token-invalid');

    // A broken file is refused on reload and the previous keys stay.
    await replaceAtomically(file, '{"keys": [ not json');
    await gw.app.reload();
    await expectStatus(gw, await tokenOf(l2, clock, FILES_ISS), 200);
    assert.equal(
      await metric(
        gw.adminUrl,
        'portaria_config_reload_total{source="issuer-keys:files",outcome="failed"}',
      ),
      1,
    );
  });
});

async function readyz(gw: Gateway): Promise<number> {
  const res = await fetch(`${gw.adminUrl}/readyz`);
  await res.arrayBuffer();
  return res.status;
}
