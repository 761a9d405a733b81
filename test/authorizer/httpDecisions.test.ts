/**
 * The HTTP decision entries (nginx auth_request, Traefik forwardAuth, Envoy ext_authz over
 * HTTP) on a real gateway in `mode: authorizer` / `both`, asked as each proxy asks: the
 * same verification, route, audience, scope and binding steps as proxy mode, over the
 * original request the proxy names; identity headers on allow; refusals as problem
 * details with their challenge; original-request headers only from trusted proxies.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { SECOND_ASK_HEADER } from '../../src/authorizer/decisionGateway.js';
import { ManualClock } from '../../src/lib/clock.js';
import { dpopBoundToken, dpopKeys, dpopProof } from '../helpers/dpopKeys.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type Gateway,
  problemOf,
  startGateway,
} from '../helpers/fixture.js';
import { sample, scrape } from '../helpers/metrics.js';
import { accessLineOf } from '../helpers/wait.js';

function authorizerSettings(extra: Record<string, unknown> = {}) {
  return () => ({
    mode: 'authorizer',
    server: { trustedProxies: ['127.0.0.1'] },
    authorizer: { host: '127.0.0.1', port: 0, grpc: { enabled: false } },
    upstream: { default: null },
    routes: [
      { id: 'orders', prefix: '/v1/orders', scopes: ['orders:read'] },
      { id: 'admin', prefix: '/v1/admin', scopes: ['admin'] },
    ],
    ...extra,
  });
}

function nginx(gw: Gateway, method: string, uri: string, headers: Record<string, string> = {}) {
  return fetch(`${gw.authorizerUrl}/nginx`, {
    headers: { 'x-original-method': method, 'x-original-uri': uri, ...headers },
  });
}

describe('HTTP decisions', () => {
  test('nginx: an allowed request gets 200 with the identity headers, never cacheable by default', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const token = await gw.token();
    const res = await nginx(gw, 'GET', '/v1/orders/42?x=1', { authorization: `Bearer ${token}` });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-client-id'), 'acme');
    assert.equal(res.headers.get('x-token-scope'), 'orders:read orders:write');
    assert.ok(res.headers.get('x-token-jti'));
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(await res.text(), '');
    const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') as string);
    assert.equal(line['portaria.decision.entry'], 'nginx');
    assert.equal(line['http.route'], 'orders');
    assert.equal(line['url.path'], '/v1/orders/42');
    assert.equal(line['http.request.method'], 'GET');
  });

  test('nginx: no token 401 with the challenge; a missing scope 403; no route 404', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const none = await nginx(gw, 'GET', '/v1/orders');
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer realm="portaria"/);
    assert.equal(none.headers.get('cache-control'), 'no-store');
    const token = await gw.token('reader', 'reader-secret-0123456789abcdefghijklmnopq');
    const scope = await nginx(gw, 'POST', '/v1/admin/x', { authorization: `Bearer ${token}` });
    assert.equal(scope.status, 403);
    assert.match(scope.headers.get('www-authenticate') ?? '', /insufficient_scope/);
    const body = await problemOf(scope);
    assert.equal(body.status, 403);
    const missing = await nginx(gw, 'GET', '/v2/else', { authorization: `Bearer ${token}` });
    assert.equal(missing.status, 404);
  });

  test('an absolute original URL (ingress-nginx X-Original-URL) decides on its path', async (t) => {
    const gw = await startGateway(t, {
      settings: authorizerSettings({
        authorizer: {
          host: '127.0.0.1',
          port: 0,
          grpc: { enabled: false },
          originalUriHeader: 'X-Original-URL',
        },
      }),
    });
    const token = await gw.token();
    const ask = (url: string) =>
      fetch(`${gw.authorizerUrl}/nginx`, {
        headers: {
          authorization: `Bearer ${token}`,
          'x-original-method': 'GET',
          'x-original-url': url,
        },
      });
    assert.equal((await ask('https://api.example.com/v1/orders/1?q=2')).status, 200);
    assert.equal((await ask('https://api.example.com:8443/v1/admin')).status, 403);
    const dots = await ask('https://api.example.com/v1/orders/../admin');
    assert.equal(dots.status, 400);
    assert.equal((await problemOf(dots)).tipo, 'urn:portaria:problem:invalid-path');
    for (const bad of [
      'https://api.example.com',
      'https://api.example.com?x=/v1/orders',
      'http://a@b/v1/orders',
    ]) {
      assert.equal((await ask(bad)).status, 400, bad);
    }
  });

  test('path tricks in the original URI are refused as in proxy mode', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const token = await gw.token();
    for (const uri of [
      '/v1/orders/../admin',
      '/v1/orders/%2e%2e/admin',
      '/v1//admin',
      'v1/orders',
      '/v1/orders/%2F',
    ]) {
      const res = await nginx(gw, 'GET', uri, { authorization: `Bearer ${token}` });
      assert.equal(res.status, 400, uri);
      assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:invalid-path', uri);
    }
  });

  test('a missing, repeated or malformed original method or URI is refused, never guessed', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const token = await gw.token();
    const auth = { authorization: `Bearer ${token}` };
    const noUri = await fetch(`${gw.authorizerUrl}/nginx`, {
      headers: { 'x-original-method': 'GET', ...auth },
    });
    assert.equal(noUri.status, 400);
    const badMethod = await nginx(gw, 'G E T', '/v1/orders', auth);
    assert.equal(badMethod.status, 400);
    const twice = new Headers(auth);
    twice.append('x-original-method', 'GET');
    twice.append('x-original-uri', '/v1/orders');
    twice.append('x-original-uri', '/v1/admin');
    const repeated = await fetch(`${gw.authorizerUrl}/nginx`, { headers: twice });
    assert.equal(repeated.status, 400);
    const unknown = await fetch(`${gw.authorizerUrl}/other`, { headers: auth });
    assert.equal(unknown.status, 404);
  });

  test('the original-request headers are trusted from server.trustedProxies only', async (t) => {
    const gw = await startGateway(t, {
      settings: authorizerSettings({ server: { trustedProxies: ['10.0.0.0/8'] } }),
    });
    const token = await gw.token();
    const res = await nginx(gw, 'GET', '/v1/orders', { authorization: `Bearer ${token}` });
    assert.equal(res.status, 403);
    assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:untrusted-peer');
  });

  test('Traefik forwardAuth: X-Forwarded-Method and -Uri', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const token = await gw.token();
    const res = await fetch(`${gw.authorizerUrl}/traefik`, {
      headers: {
        authorization: `Bearer ${token}`,
        'x-forwarded-method': 'DELETE',
        'x-forwarded-uri': '/v1/orders/7',
        'x-forwarded-host': 'api.example.com',
        'x-forwarded-proto': 'https',
      },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-client-id'), 'acme');
    const refused = await fetch(`${gw.authorizerUrl}/traefik`, {
      headers: { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v1/orders' },
    });
    assert.equal(refused.status, 401);
    assert.equal((await problemOf(refused)).status, 401);
  });

  test('Envoy over HTTP: the original path after /envoy, spoofed identity names to remove', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const token = await gw.token();
    const res = await fetch(`${gw.authorizerUrl}/envoy/v1/orders/1`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, x_client_id: 'mallory' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-client-id'), 'acme');
    const remove = (res.headers.get('x-envoy-auth-headers-to-remove') ?? '').split(',');
    assert.ok(remove.includes('x_client_id'), remove.join(','));
    assert.ok(!remove.includes('x-client-id'));
  });

  test('cacheable decisions: private, max-age bounded by the setting and the token exp; refusals never', async (t) => {
    const gw = await startGateway(t, {
      settings: authorizerSettings({
        authorizer: {
          host: '127.0.0.1',
          port: 0,
          grpc: { enabled: false },
          cacheDecisions: { enabled: true, maxAgeSeconds: 30 },
        },
      }),
    });
    const token = await gw.token();
    const res = await nginx(gw, 'GET', '/v1/orders', { authorization: `Bearer ${token}` });
    assert.equal(res.headers.get('cache-control'), 'private, max-age=30');
    assert.equal(res.headers.get('vary'), 'Authorization');
    const refused = await nginx(gw, 'GET', '/v1/orders');
    assert.equal(refused.headers.get('cache-control'), 'no-store');
  });

  test('a metered route: allows carry the RateLimit fields and are never cacheable; past the limit 429', async (t) => {
    const settings = (headers: string) =>
      authorizerSettings({
        authorizer: {
          host: '127.0.0.1',
          port: 0,
          grpc: { enabled: false },
          cacheDecisions: { enabled: true, maxAgeSeconds: 30 },
        },
        quotas: { policies: { standard: { quota: { limit: 2, window: 'day' } } }, headers },
        routes: [
          { id: 'orders', prefix: '/v1/orders', scopes: ['orders:read'], quota: 'standard' },
          { id: 'admin', prefix: '/v1/admin', scopes: ['orders:read'] },
        ],
      });
    const gw = await startGateway(t, { settings: settings('always') });
    const auth = { authorization: `Bearer ${await gw.token()}` };
    for (const left of [1, 0]) {
      const res = await nginx(gw, 'GET', '/v1/orders/1', auth);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.equal(res.headers.get('ratelimit-policy'), '"standard-quota";q=2;w=86400');
      assert.match(
        res.headers.get('ratelimit') ?? '',
        new RegExp(`^"standard-quota";r=${left};t=\\d+$`),
      );
    }
    const refused = await nginx(gw, 'GET', '/v1/orders/1', auth);
    assert.equal(refused.status, 429);
    assert.equal((await problemOf(refused)).tipo, 'urn:portaria:problem:quota-exceeded');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    assert.match(refused.headers.get('ratelimit') ?? '', /^"standard-quota";r=0;t=\d+$/);
    // An unmetered route: no fields, and cacheable as configured.
    const open = await nginx(gw, 'GET', '/v1/admin/1', auth);
    assert.equal(open.status, 200);
    assert.equal(open.headers.get('ratelimit'), null);
    assert.match(open.headers.get('cache-control') ?? '', /^private, max-age=\d+$/);

    // headers: refusals — the allow carries none; Envoy's entry the same as nginx's.
    const quiet = await startGateway(t, { settings: settings('refusals') });
    const token = await quiet.token();
    const allowed = await fetch(`${quiet.authorizerUrl}/envoy/v1/orders/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers.get('ratelimit'), null);
    assert.equal(allowed.headers.get('ratelimit-policy'), null);
  });

  test("nginx's second ask about a refusal counts nothing and never allows: 503 refusal-lapsed once the refusal no longer holds", async (t) => {
    const clock = new ManualClock(Date.UTC(2026, 11, 3, 12, 0, 10));
    const gw = await startGateway(t, {
      clock,
      settings: authorizerSettings({
        quotas: { policies: { 'per-minute': { quota: { limit: 1, window: 'minute' } } } },
        routes: [
          { id: 'orders', prefix: '/v1/orders', scopes: ['orders:read'], quota: 'per-minute' },
        ],
      }),
    });
    const auth = { authorization: `Bearer ${await gw.token()}` };
    const second = { ...auth, [SECOND_ASK_HEADER]: '1' };
    assert.equal((await nginx(gw, 'GET', '/v1/orders/1', auth)).status, 200);
    const refused = await nginx(gw, 'GET', '/v1/orders/1', auth);
    assert.equal(refused.status, 429);
    // Asked again for the refusal's answer: the same refusal.
    const again = await nginx(gw, 'GET', '/v1/orders/1', second);
    assert.equal(again.status, 429);
    assert.equal((await problemOf(again)).tipo, 'urn:portaria:problem:quota-exceeded');
    // The next minute: the refusal has lapsed, but nginx will not forward a request it
    // already turned down; the second ask is refused, and uses no quota.
    clock.advance(60_000);
    const lapsed = await nginx(gw, 'GET', '/v1/orders/1', second);
    assert.equal(lapsed.status, 503);
    assert.equal(lapsed.headers.get('retry-after'), '1');
    assert.equal(lapsed.headers.get('cache-control'), 'no-store');
    const line = await accessLineOf(gw.logs, lapsed.headers.get('x-request-id') as string);
    assert.equal(line['portaria.reason'], 'refusal-lapsed');
    assert.equal(line['portaria.decision.second_ask'], true);
    assert.equal((await nginx(gw, 'GET', '/v1/orders/1', auth)).status, 200);
    assert.equal((await nginx(gw, 'GET', '/v1/orders/1', auth)).status, 429);
    const counted = await scrape(gw.adminUrl);
    const series = (outcome: string) =>
      sample(
        counted,
        `portaria_quota_decisions_total{policy="per-minute",route="orders",outcome="${outcome}"}`,
      );
    assert.equal(series('allowed'), 2);
    assert.equal(series('refused'), 2);
  });

  test('DPoP through the nginx entry: a fresh proof for the origin the proxy names passes once; a second ask gets the refusal of its first', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings({ dpop: { enabled: true } }) });
    const keys = await dpopKeys();
    const token = await dpopBoundToken(gw.url, keys, CLIENT_ID, CLIENT_SECRET);
    // The trusted proxy names the origin the client used (X-Forwarded-Proto and -Host).
    const origin = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.com' };
    const ask = (uri: string, proof: string, extra: Record<string, string> = {}) =>
      nginx(gw, 'GET', uri, { authorization: `DPoP ${token}`, dpop: proof, ...origin, ...extra });
    const reasonOf = async (answer: Response): Promise<unknown> => {
      await answer.arrayBuffer();
      const line = await accessLineOf(gw.logs, answer.headers.get('x-request-id') as string);
      return line['portaria.reason'];
    };
    const proof = await dpopProof(keys, 'GET', 'https://api.example.com/v1/orders/1', { token });
    const allowed = await ask('/v1/orders/1?page=2', proof);
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers.get('x-client-id'), CLIENT_ID);
    const replayed = await ask('/v1/orders/1', proof);
    assert.equal(replayed.status, 401);
    assert.match(replayed.headers.get('www-authenticate') ?? '', /^DPoP algs="/);
    assert.equal(await reasonOf(replayed), 'dpop-replayed');
    // nginx asks again about that refusal: every other step passes, the proof is spent.
    const replayedAgain = await ask('/v1/orders/1', proof, { [SECOND_ASK_HEADER]: '1' });
    assert.equal(replayedAgain.status, 401);
    assert.equal(await reasonOf(replayedAgain), 'dpop-replayed');
    const elsewhere = await dpopProof(keys, 'GET', 'https://api.example.com/v1/orders/1', {
      token,
    });
    assert.equal(await reasonOf(await ask('/v1/orders/2', elsewhere)), 'dpop-htu');

    // Refused after the proof step (no route serves the path): the second ask, with the
    // same proof, gets the same refusal, not "replayed".
    const lost = await dpopProof(keys, 'GET', 'https://api.example.com/v2/else', { token });
    const first = await ask('/v2/else', lost);
    assert.equal(first.status, 404);
    const secondAsk = await ask('/v2/else', lost, { [SECOND_ASK_HEADER]: '1' });
    assert.equal(secondAsk.status, 404);
    assert.equal((await problemOf(secondAsk)).status, 404);
  });

  test('a revoked token is refused at the next decision', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const token = await gw.token();
    const auth = { authorization: `Bearer ${token}` };
    assert.equal((await nginx(gw, 'GET', '/v1/orders', auth)).status, 200);
    const jti = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()).jti;
    await gw.app.revoke(jti);
    const res = await nginx(gw, 'GET', '/v1/orders', auth);
    assert.equal(res.status, 401);
    assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:token-revoked');
  });

  test('a route reload changes the next decision', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings(), configFile: true });
    const token = await gw.token();
    const auth = { authorization: `Bearer ${token}` };
    assert.equal((await nginx(gw, 'GET', '/v1/orders/1', auth)).status, 200);
    const file = gw.configFile as string;
    const settings = JSON.parse(await readFile(file, 'utf8'));
    settings.routes[0].scopes = ['orders:admin'];
    await writeFile(file, JSON.stringify(settings));
    await gw.app.reload();
    assert.equal((await nginx(gw, 'GET', '/v1/orders/1', auth)).status, 403);
  });

  test('mode: authorizer forwards nothing; mode: both forwards and decides', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const token = await gw.token();
    const res = await fetch(`${gw.url}/v1/orders`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 404);
    assert.equal(gw.upstream.received.length, 0);

    const both = await startGateway(t, {
      settings: (upstream) => ({
        mode: 'both',
        server: { trustedProxies: ['127.0.0.1'] },
        authorizer: { host: '127.0.0.1', port: 0, grpc: { enabled: false } },
        upstream: { default: { upstream } },
      }),
    });
    const second = await both.token();
    const forwarded = await fetch(`${both.url}/anything`, {
      headers: { authorization: `Bearer ${second}` },
    });
    assert.equal(forwarded.status, 200);
    const decided = await nginx(both, 'GET', '/anything', { authorization: `Bearer ${second}` });
    assert.equal(decided.status, 200);
  });
});
