/**
 * The admin revocation API through a real admin listener (node:http + createAdminHandler)
 * and a real MemoryRevocationStore on a manual clock. The app wiring (config → deps) is
 * tested with the gateway; here every case of the API contract.
 */
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import { describe, type TestContext, test } from 'node:test';
import { type AdminDeps, createAdminHandler } from '../../src/admin/adminRoutes.js';
import { ManualClock } from '../../src/lib/clock.js';
import { MemoryRevocationStore } from '../../src/revocation/memoryRevocationStore.js';
import type { RevocationStore } from '../../src/revocation/revocationStore.js';
import { problemOf } from '../helpers/fixture.js';

const ADMIN_TOKEN = 'admin-token-0123456789abcdefghijklmnop';
const PATH = '/admin/v1/revocations';
const LIFETIME = 3600;
const SKEW = 30;
const START_MS = Date.UTC(2026, 0, 1);
const NOW = START_MS / 1000;

interface AdminServer {
  url: string;
  store: RevocationStore;
  clock: ManualClock;
  revoked: string[];
}

async function startAdminServer(
  t: TestContext,
  options: { adminToken?: string | null; store?: RevocationStore; off?: boolean } = {},
): Promise<AdminServer> {
  const clock = new ManualClock(START_MS);
  const store = options.store ?? new MemoryRevocationStore(clock);
  const revoked: string[] = [];
  const deps: AdminDeps = {
    metricsText: async () => ({ contentType: 'text/plain', text: '' }),
    ready: () => ({ ready: true }),
    problemTypeBase: 'urn:portaria:problem:',
    maxHeaderLines: 100,
    ...(options.off
      ? {}
      : {
          revocations: {
            store,
            adminToken: options.adminToken === undefined ? ADMIN_TOKEN : options.adminToken,
            maxLifetimeSeconds: LIFETIME,
            clockSkewSeconds: SKEW,
            now: () => clock.now(),
            onRevoked: (kind) => revoked.push(kind),
          },
        }),
  };
  const server = createServer(createAdminHandler(deps));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, store, clock, revoked };
}

function post(
  server: AdminServer,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${server.url}${PATH}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      'content-type': 'application/json',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function assertBadRequest(res: Response, detail: string): Promise<void> {
  assert.equal(res.status, 400);
  const problem = await problemOf(res);
  assert.equal(problem.tipo, 'urn:portaria:problem:invalid-request');
  assert.equal(problem.detalhe, detail);
}

const token = (tokenId: string, clientId = 'acme', issuedAt = NOW - 10) => ({
  tokenId,
  clientId,
  issuedAt,
});

describe('admin revocation API: authentication', () => {
  test('without a token: 401 problem with WWW-Authenticate, nothing revoked', async (t) => {
    const server = await startAdminServer(t);
    const res = await fetch(`${server.url}${PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jti: 'j1' }),
    });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="portaria-admin"');
    assert.deepEqual(await problemOf(res), {
      tipo: 'urn:portaria:problem:token-missing',
      titulo: 'Access token missing',
      status: 401,
      detalhe: 'An admin token is required.',
      instancia: `${PATH}#admin`,
    });
    assert.equal(server.store.isRevoked(token('j1')), false);
    const list = await fetch(`${server.url}${PATH}`);
    assert.equal(list.status, 401);
  });

  for (const [name, authorization] of [
    ['a wrong token', `Bearer ${ADMIN_TOKEN}x`],
    ['a prefix of the token', `Bearer ${ADMIN_TOKEN.slice(0, 10)}`],
    ['another scheme', `Basic ${ADMIN_TOKEN}`],
    ['an empty bearer', 'Bearer '],
  ] as const) {
    test(`with ${name}: 401 problem, nothing revoked`, async (t) => {
      const server = await startAdminServer(t);
      const res = await post(server, { jti: 'j1' }, { authorization });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="portaria-admin"');
      const problem = await problemOf(res);
      assert.equal(problem.tipo, 'urn:portaria:problem:token-invalid');
      assert.equal(problem.detalhe, 'The admin token is invalid.');
      assert.equal(server.store.isRevoked(token('j1')), false);
    });
  }

  test('two Authorization headers are refused even when one is right', async (t) => {
    const server = await startAdminServer(t);
    const status = await new Promise<number>((resolve, reject) => {
      const url = new URL(`${server.url}${PATH}`);
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: PATH,
          method: 'GET',
          headers: [
            'host',
            url.host,
            'authorization',
            `Bearer ${ADMIN_TOKEN}`,
            'authorization',
            `Bearer ${ADMIN_TOKEN}`,
          ],
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 401);
  });

  for (const [name, options] of [
    ['no admin token is configured', { adminToken: null }],
    ['the admin token is empty', { adminToken: '' }],
    ['the app gives no revocation deps', { off: true }],
  ] as const) {
    test(`the API is off (404 problem) when ${name}`, async (t) => {
      const server = await startAdminServer(t, options);
      for (const res of [await post(server, { jti: 'j1' }), await fetch(`${server.url}${PATH}`)]) {
        assert.equal(res.status, 404);
        assert.deepEqual(await problemOf(res), {
          tipo: 'urn:portaria:problem:not-found',
          titulo: 'Not found',
          status: 404,
          detalhe: 'The admin API is off (no admin token configured).',
          instancia: `${PATH}#admin`,
        });
      }
    });
  }

  test('other methods answer 405 with Allow', async (t) => {
    const server = await startAdminServer(t);
    for (const method of ['PUT', 'DELETE', 'PATCH']) {
      const res = await fetch(`${server.url}${PATH}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'GET, HEAD, POST');
      assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:method-not-allowed');
    }
  });

  test('/healthz, /readyz and /metrics stay open without the admin token', async (t) => {
    const server = await startAdminServer(t);
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const res = await fetch(`${server.url}${path}`);
      assert.equal(res.status, 200, path);
      await res.arrayBuffer();
    }
  });
});

describe('admin revocation API: POST', () => {
  test('{jti} → 201 once stored; the token is revoked until now + lifetime + 2 × skew', async (t) => {
    const server = await startAdminServer(t);
    const res = await post(server, { jti: 'j1' });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await res.json(), {
      kind: 'token',
      jti: 'j1',
      // A token stamped by an issuer whose clock runs ahead by the skew expires at
      // now + skew + lifetime and is accepted a skew longer.
      expiresAt: NOW + LIFETIME + 2 * SKEW,
    });
    assert.equal(server.store.isRevoked(token('j1')), true);
    assert.equal(server.store.isRevoked(token('j2')), false);
    assert.deepEqual(server.revoked, ['token']);
  });

  test('{jti, expiresAt} keeps the entry until expiresAt + skew', async (t) => {
    const server = await startAdminServer(t);
    const res = await post(server, { jti: 'j1', expiresAt: NOW + 60 });
    assert.equal(res.status, 201);
    assert.deepEqual(await res.json(), { kind: 'token', jti: 'j1', expiresAt: NOW + 60 + SKEW });
    assert.deepEqual(server.store.entries().tokens, [
      { tokenId: 'j1', expiresAt: NOW + 60 + SKEW },
    ]);
  });

  test('{jti, expiresAt} takes the exp of a token stamped by a clock ahead by the skew', async (t) => {
    const server = await startAdminServer(t);
    const exp = NOW + SKEW + LIFETIME;
    const res = await post(server, { jti: 'ahead', expiresAt: exp });
    assert.equal(res.status, 201);
    assert.deepEqual(await res.json(), { kind: 'token', jti: 'ahead', expiresAt: exp + SKEW });
    const late = await post(server, { jti: 'late', expiresAt: exp + 1 });
    assert.equal(late.status, 400);
    await late.arrayBuffer();
  });

  test('{clientId, issuedBefore} applies the cut-off (RFC 3339 and epoch seconds)', async (t) => {
    const server = await startAdminServer(t);
    const cut = NOW - 100;
    const res = await post(server, {
      clientId: 'acme',
      issuedBefore: new Date(cut * 1000).toISOString(),
    });
    assert.equal(res.status, 201);
    assert.deepEqual(await res.json(), {
      kind: 'client',
      clientId: 'acme',
      issuedBefore: cut,
      expiresAt: cut + LIFETIME + SKEW,
    });
    assert.equal(server.store.isRevoked(token('a', 'acme', cut - 1)), true);
    assert.equal(server.store.isRevoked(token('b', 'acme', cut)), true);
    assert.equal(server.store.isRevoked(token('c', 'acme', cut + 1)), false);
    assert.equal(server.store.isRevoked(token('d', 'other', cut - 1)), false);

    const res2 = await post(server, { clientId: 'other', issuedBefore: cut });
    assert.equal(res2.status, 201);
    assert.equal(((await res2.json()) as { issuedBefore: number }).issuedBefore, cut);
    assert.equal(server.store.isRevoked(token('d', 'other', cut - 1)), true);
    assert.deepEqual(server.revoked, ['client', 'client']);
  });

  test('{clientId} alone cuts off at now + skew (clocks running ahead); an offset date-time is understood', async (t) => {
    const server = await startAdminServer(t);
    const res = await post(server, { clientId: 'acme' });
    assert.equal(res.status, 201);
    assert.equal(((await res.json()) as { issuedBefore: number }).issuedBefore, NOW + SKEW);
    assert.equal(server.store.isRevoked(token('a', 'acme', NOW)), true);
    assert.equal(server.store.isRevoked(token('b', 'acme', NOW + SKEW)), true, 'iat ahead');
    assert.equal(server.store.isRevoked(token('c', 'acme', NOW + SKEW + 1)), false);

    const res2 = await post(server, { clientId: 'b', issuedBefore: '2025-12-31T23:00:00.5-01:00' });
    assert.equal(res2.status, 201);
    assert.equal(((await res2.json()) as { issuedBefore: number }).issuedBefore, NOW);
    // A partner's client id may hold spaces and any script: every accepted token is revocable.
    const spaced = await post(server, { clientId: 'Service Account ü' });
    assert.equal(spaced.status, 201);
    await spaced.arrayBuffer();
    assert.equal(server.store.isRevoked(token('s', 'Service Account ü', NOW)), true);
    // A partner token's fractional iat within the cut-off's second is covered.
    assert.equal(server.store.isRevoked(token('d', 'b', NOW + 0.4)), true);
    assert.equal(server.store.isRevoked(token('e', 'b', NOW + 1)), false);
  });

  for (const [name, body, detail] of [
    [
      'both jti and clientId',
      { jti: 'j', clientId: 'c' },
      'Exactly one of jti and clientId is required.',
    ],
    ['neither jti nor clientId', {}, 'Exactly one of jti and clientId is required.'],
    ['an unknown property', { jti: 'j', reason: 'x' }, 'Property "reason" is not allowed.'],
    ['expiresAt in the past', { jti: 'j', expiresAt: NOW - 1 }, 'expiresAt must be in the future.'],
    ['expiresAt now', { jti: 'j', expiresAt: NOW }, 'expiresAt must be in the future.'],
    [
      'expiresAt beyond the longest lifetime',
      { jti: 'j', expiresAt: NOW + SKEW + LIFETIME + 1 },
      'expiresAt must not exceed now plus the clock skew and the maximum token lifetime.',
    ],
    [
      'a fractional expiresAt',
      { jti: 'j', expiresAt: NOW + 1.5 },
      'expiresAt must be an integer (seconds since the epoch).',
    ],
    [
      'expiresAt with clientId',
      { clientId: 'c', expiresAt: NOW + 5 },
      'expiresAt is allowed with jti only.',
    ],
    [
      'issuedBefore with jti',
      { jti: 'j', issuedBefore: NOW },
      'issuedBefore is allowed with clientId only.',
    ],
    ['a numeric jti', { jti: 42 }, 'jti must be a string.'],
    [
      'an empty jti',
      { jti: '' },
      'jti must be 1 to 512 characters without control characters or lone surrogates.',
    ],
    [
      'a jti with a lone surrogate',
      { jti: 'j\ud800' },
      'jti must be 1 to 512 characters without control characters or lone surrogates.',
    ],
    [
      'a clientId with a control character',
      { clientId: 'a\u0007b' },
      'clientId must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates.',
    ],
    [
      'a clientId with a C1 control character',
      { clientId: 'é\u0085' },
      'clientId must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates.',
    ],
    [
      'a clientId over 256 characters',
      { clientId: 'c'.repeat(257) },
      'clientId must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates.',
    ],
    [
      'a clientId of 86 CJK characters (258 bytes)',
      { clientId: '客'.repeat(86) },
      'clientId must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates.',
    ],
    [
      'a clientId with a lone surrogate',
      { clientId: 'c\ud83d' },
      'clientId must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates.',
    ],
    [
      'a date that does not exist',
      { clientId: 'c', issuedBefore: '2025-02-30T00:00:00Z' },
      'issuedBefore must be an RFC 3339 date-time or an integer (seconds since the epoch).',
    ],
    [
      'a date without a zone',
      { clientId: 'c', issuedBefore: '2025-12-01T00:00:00' },
      'issuedBefore must be an RFC 3339 date-time or an integer (seconds since the epoch).',
    ],
    [
      'a cut-off in the future',
      { clientId: 'c', issuedBefore: NOW + SKEW + 1 },
      'issuedBefore must not be in the future.',
    ],
    ['a JSON array', [], 'The request body must be a JSON object.'],
    ['text that is not JSON', '{"jti":', 'The request body is not valid JSON.'],
    ['a duplicate key', '{"jti":"a","jti":"b"}', 'Property "jti" appears more than once.'],
  ] as const) {
    test(`${name} → 400 naming the field, nothing stored`, async (t) => {
      const server = await startAdminServer(t);
      await assertBadRequest(await post(server, body), detail);
      assert.equal(server.store.size(), 0);
      assert.deepEqual(server.revoked, []);
    });
  }

  test('a wrong media type → 415', async (t) => {
    const server = await startAdminServer(t);
    const res = await post(server, { jti: 'j1' }, { 'content-type': 'text/plain' });
    assert.equal(res.status, 415);
    assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:unsupported-media-type');
    assert.equal(server.store.size(), 0);
  });

  test('a body over 16 KiB → 413, connection closed', async (t) => {
    const server = await startAdminServer(t);
    const res = await post(server, { jti: 'j'.repeat(16 * 1024) });
    assert.equal(res.status, 413);
    assert.equal(res.headers.get('connection'), 'close');
    assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:payload-too-large');
    assert.equal(server.store.size(), 0);
  });

  test('a store that fails → 503 problem, never an acknowledgement', async (t) => {
    const clock = new ManualClock(START_MS);
    const failing = new MemoryRevocationStore(clock);
    failing.revokeToken = () => Promise.reject(new Error('disk full'));
    failing.revokeClient = () => Promise.reject(new Error('disk full'));
    const server = await startAdminServer(t, { store: failing });
    for (const body of [{ jti: 'j1' }, { clientId: 'acme' }]) {
      const res = await post(server, body);
      assert.equal(res.status, 503);
      assert.deepEqual(await problemOf(res), {
        tipo: 'urn:portaria:problem:service-unavailable',
        titulo: 'Service unavailable',
        status: 503,
        detalhe: 'The revocation could not be stored.',
        instancia: `${PATH}#admin`,
      });
    }
    assert.deepEqual(server.revoked, []);
  });
});

describe('admin revocation API: GET', () => {
  test('lists token and client entries not yet expired', async (t) => {
    const server = await startAdminServer(t);
    const empty = await fetch(`${server.url}${PATH}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(empty.status, 200);
    assert.deepEqual(await empty.json(), { tokens: [], clients: [] });

    assert.equal((await post(server, { jti: 'j1', expiresAt: NOW + 60 })).status, 201);
    assert.equal((await post(server, { clientId: 'acme', issuedBefore: NOW - 5 })).status, 201);
    const res = await fetch(`${server.url}${PATH}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await res.json(), {
      tokens: [{ jti: 'j1', expiresAt: NOW + 60 + SKEW }],
      clients: [{ clientId: 'acme', issuedBefore: NOW - 5, expiresAt: NOW - 5 + LIFETIME + SKEW }],
    });

    const head = await fetch(`${server.url}${PATH}`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), '');

    server.clock.advance((60 + SKEW + 1) * 1000);
    const later = await fetch(`${server.url}${PATH}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.deepEqual(((await later.json()) as { tokens: unknown[] }).tokens, []);
  });
});
