/**
 * Behind a real nginx using `auth_request`, configured by the shipped
 * docs/examples/nginx-auth-request.conf and nginx-auth-request-cache.conf (rendered with
 * this test's ports by plain string replacement): Portaria in `mode: authorizer` decides,
 * nginx forwards to a recorder application. Allowed requests reach it with Portaria's
 * identity headers and nothing a client claimed under those names; refusals reach the
 * client with Portaria's status, problem body and one challenge, and never the
 * application; with the decision cache a revoked token passes until its cached decision
 * runs out, and not after.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { decodeJwt } from 'jose';
import { dpopBoundToken, dpopKeys, dpopProof } from '../helpers/dpopKeys.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type Gateway,
  startGateway,
  startUpstream,
  type Upstream,
} from '../helpers/fixture.js';
import { type NginxServer, startNginx } from '../helpers/nginxServer.js';
import { parsedLogs, waitFor } from '../helpers/wait.js';

const PLAIN = 'nginx-auth-request.conf';
const CACHED = 'nginx-auth-request-cache.conf';
const READER: [string, string] = ['reader', 'reader-secret-0123456789abcdefghijklmnopq'];

/** From dist-test/test/authorizer/ up to the repository. */
const example = (name: string) =>
  fileURLToPath(new URL(`../../../docs/examples/${name}`, import.meta.url));

/** `text` with `from` replaced by `to`, which must occur exactly once. */
function replaceOnce(text: string, from: string, to: string): string {
  assert.equal(text.split(from).length, 2, `the example has "${from}" once`);
  return text.replace(from, to);
}

interface Setup {
  readonly gw: Gateway;
  readonly upstream: Upstream;
  readonly nginx: NginxServer;
}

interface Options {
  readonly file?: typeof PLAIN | typeof CACHED;
  /** Portaria's `authorizer.cacheDecisions.maxAgeSeconds` (caching off without it). */
  readonly maxAgeSeconds?: number;
  /** Where nginx finds Portaria's decisions (default: the gateway's decision listener). */
  readonly decisions?: string;
  /** A change to the rendered configuration (a variant the example's comments describe). */
  readonly edit?: (config: string) => string;
  /** The orders route metered at this many requests a day (`quotas.headers: always`). */
  readonly quotaLimit?: number;
  /** `dpop.enabled`. */
  readonly dpop?: boolean;
}

async function behindNginx(t: TestContext, options: Options = {}): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-nginx-authz-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  // Stopped before the gateway drains (hooks run in order), or nginx's idle keep-alive
  // connections would hold the drain.
  let nginx: NginxServer | undefined;
  t.after(() => nginx?.stop());
  const upstream = await startUpstream(t);
  const gw = await startGateway(t, {
    upstream,
    settings: () => ({
      mode: 'authorizer',
      server: { trustedProxies: ['127.0.0.1'] },
      authorizer: {
        host: '127.0.0.1',
        port: 0,
        grpc: { enabled: false },
        ...(options.maxAgeSeconds === undefined
          ? {}
          : { cacheDecisions: { enabled: true, maxAgeSeconds: options.maxAgeSeconds } }),
      },
      upstream: { default: null },
      routes: [
        {
          id: 'orders',
          prefix: '/v1/orders',
          scopes: ['orders:read'],
          ...(options.quotaLimit === undefined ? {} : { quota: 'daily' }),
        },
        { id: 'admin', prefix: '/v1/admin', scopes: ['admin'] },
      ],
      ...(options.dpop === true ? { dpop: { enabled: true } } : {}),
      ...(options.quotaLimit === undefined
        ? {}
        : {
            quotas: {
              policies: { daily: { quota: { limit: options.quotaLimit, window: 'day' } } },
              headers: 'always',
            },
          }),
    }),
  });
  const file = options.file ?? PLAIN;
  const text = await readFile(example(file), 'utf8');
  const decisions = options.decisions ?? new URL(gw.authorizerUrl).host;
  nginx = await startNginx(t, {
    dir,
    http: (port) => {
      let config = replaceOnce(text, 'listen 8000;', `listen 127.0.0.1:${port};`);
      config = replaceOnce(config, 'server 127.0.0.1:8181;', `server ${decisions};`);
      config = replaceOnce(
        config,
        'server 127.0.0.1:8080;',
        `server ${new URL(upstream.url).host};`,
      );
      if (file === CACHED) {
        config = replaceOnce(config, ' /var/cache/nginx/portaria ', ` ${join(dir, 'cache')} `);
      }
      return options.edit === undefined ? config : options.edit(config);
    },
  });
  return { gw, upstream, nginx };
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Field names and values in the order received. */
  readonly rawHeaders: readonly string[];
  readonly body: string;
}

/** A request through nginx, its path exactly as given (fetch would resolve `..`). */
function send(
  nginx: NginxServer,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
  port = nginx.port,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method, path, headers, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            rawHeaders: res.rawHeaders,
            body,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(method === 'POST' ? '{"order":1}' : undefined);
  });
}

/** Every value of a header, in order (case-insensitive name). */
function valuesOf(rawHeaders: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.toLowerCase() === name) out.push(rawHeaders[i + 1] as string);
  }
  return out;
}

/** The decision access lines so far (each one a question nginx asked Portaria). */
function decisionLines(gw: Gateway) {
  return parsedLogs(gw.logs).filter(
    (l) => l['portaria.decision.entry'] === 'nginx' && String(l.msg).startsWith('request'),
  );
}

/** Waits until Portaria has logged `count` decisions, then checks there are no more. */
async function expectDecisions(gw: Gateway, count: number): Promise<void> {
  await waitFor(`${count} decision lines`, () =>
    decisionLines(gw).length >= count ? true : undefined,
  );
  assert.equal(decisionLines(gw).length, count);
}

function problem(answer: Answer): Record<string, unknown> {
  assert.equal(answer.headers['content-type'], 'application/problem+json', answer.body);
  return JSON.parse(answer.body) as Record<string, unknown>;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

test('a metered route: the client gets the RateLimit fields through nginx, then Portaria’s 429, which never reaches the application', async (t) => {
  const { gw, upstream, nginx } = await behindNginx(t, { quotaLimit: 2 });
  const token = await gw.token();
  for (const left of [1, 0]) {
    const res = await send(nginx, '/v1/orders/42', bearer(token));
    assert.equal(res.status, 200);
    assert.equal(res.headers['x-upstream'], 'yes');
    assert.deepEqual(valuesOf(res.rawHeaders, 'ratelimit-policy'), ['"daily-quota";q=2;w=86400']);
    const [limit] = valuesOf(res.rawHeaders, 'ratelimit');
    assert.match(limit ?? '', new RegExp(`^"daily-quota";r=${left};t=\\d+$`));
  }
  assert.equal(upstream.received.length, 2);
  // Nothing is counted by the refusal's second ask: it is refused the same way.
  const refused = await send(nginx, '/v1/orders/42', bearer(token));
  assert.equal(refused.status, 429);
  assert.equal(problem(refused).tipo, 'urn:portaria:problem:quota-exceeded');
  assert.ok(Number(refused.headers['retry-after']) >= 1);
  assert.match(refused.headers.ratelimit as string, /^"daily-quota";r=0;t=\d+$/);
  assert.equal(upstream.received.length, 2);
  // A route without a quota: nginx sends no empty fields.
  const open = await send(nginx, '/v1/admin/x', bearer(token));
  assert.equal(open.status, 403);
  assert.deepEqual(valuesOf(open.rawHeaders, 'ratelimit'), []);
});

test('DPoP behind nginx: a proof passes once; a refusal after the proof check reaches the client as itself, not as a replay', async (t) => {
  const { gw, upstream, nginx } = await behindNginx(t, { dpop: true });
  const keys = await dpopKeys();
  const token = await dpopBoundToken(gw.url, keys, CLIENT_ID, CLIENT_SECRET);
  // The configuration sends `Host $host` (no port) and `X-Forwarded-Proto $scheme`.
  const htu = (path: string) => `http://127.0.0.1${path}`;
  const sent = (proof: string) => ({ authorization: `DPoP ${token}`, dpop: proof });
  const proof = await dpopProof(keys, 'GET', htu('/v1/orders/42'), { token });
  const allowed = await send(nginx, '/v1/orders/42', sent(proof));
  assert.equal(allowed.status, 200);
  assert.equal(allowed.headers['x-upstream'], 'yes');
  const replayed = await send(nginx, '/v1/orders/42', sent(proof));
  assert.equal(replayed.status, 401);
  assert.match(
    replayed.headers['www-authenticate'] as string,
    /^DPoP algs=".*error="invalid_dpop_proof"/,
  );
  // A missing scope is found after the proof is spent: nginx asks again, with the same
  // proof, for the 403 to hand the client.
  const admin = await dpopProof(keys, 'GET', htu('/v1/admin/x'), { token });
  const refused = await send(nginx, '/v1/admin/x', sent(admin));
  assert.equal(refused.status, 403, refused.body);
  assert.equal(problem(refused).status, 403);
  assert.match(refused.headers['www-authenticate'] as string, /^DPoP .*error="insufficient_scope"/);
  assert.equal(upstream.received.length, 1);
});

test('an allowed request reaches the application with Portaria’s identity, never the client’s', async (t) => {
  const { gw, upstream, nginx } = await behindNginx(t);
  const token = await gw.token();
  const res = await send(nginx, '/v1/orders/42?x=1', {
    ...bearer(token),
    'x-client-id': 'mallory',
    'x-token-scope': 'admin',
    'x-token-jti': 'forged',
    x_client_id: 'mallory',
    x_token_scope: 'admin',
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers['x-upstream'], 'yes');
  assert.equal(upstream.received.length, 1);
  const seen = upstream.received[0]?.rawHeaders ?? [];
  assert.equal(upstream.received[0]?.url, '/v1/orders/42?x=1');
  assert.deepEqual(valuesOf(seen, 'x-client-id'), ['acme']);
  assert.deepEqual(valuesOf(seen, 'x-token-scope'), ['orders:read orders:write']);
  assert.deepEqual(valuesOf(seen, 'x-token-jti'), [decodeJwt(token).jti]);
  assert.deepEqual(valuesOf(seen, 'x_client_id'), []);
  assert.deepEqual(valuesOf(seen, 'x_token_scope'), []);
  // One decision, about the original request.
  await expectDecisions(gw, 1);
  const [line] = decisionLines(gw);
  assert.equal(line?.['url.path'], '/v1/orders/42');
  assert.equal(line?.['http.route'], 'orders');
  assert.equal(line?.['http.request.method'], 'GET');
});

test('underscores_in_headers on: the X_… lines still keep a client’s X_Client_Id away', async (t) => {
  const { gw, upstream, nginx } = await behindNginx(t, {
    edit: (config) =>
      replaceOnce(config, '    server_name ', '    underscores_in_headers on;\n    server_name '),
  });
  const res = await send(nginx, '/v1/orders/1', {
    ...bearer(await gw.token()),
    x_client_id: 'mallory',
    x_token_scope: 'admin',
    x_token_jti: 'forged',
    'x-other_name': 'passes',
  });
  assert.equal(res.status, 200);
  const seen = upstream.received[0]?.rawHeaders ?? [];
  // Underscores reach the application now (the proof the setting is on) …
  assert.deepEqual(valuesOf(seen, 'x-other_name'), ['passes']);
  // … but not under the identity headers' names.
  assert.deepEqual(valuesOf(seen, 'x_client_id'), []);
  assert.deepEqual(valuesOf(seen, 'x_token_scope'), []);
  assert.deepEqual(valuesOf(seen, 'x_token_jti'), []);
  assert.deepEqual(valuesOf(seen, 'x-client-id'), ['acme']);
});

test('no token: 401 with Portaria’s problem body and one challenge, asked twice, never forwarded', async (t) => {
  const { gw, upstream, nginx } = await behindNginx(t);
  for (const method of ['GET', 'POST']) {
    const res = await send(nginx, '/v1/orders/1', {}, method);
    assert.equal(res.status, 401, method);
    const challenges = valuesOf(res.rawHeaders, 'www-authenticate');
    assert.equal(challenges.length, 1, challenges.join(' | '));
    assert.match(challenges[0] as string, /^Bearer realm="portaria"/);
    const body = problem(res);
    assert.equal(body.tipo, 'urn:portaria:problem:token-missing');
    assert.equal(body.status, 401);
    assert.equal(res.headers['cache-control'], 'no-store');
  }
  // The refusal's cost: each refused request is decided twice (auth_request, then
  // @portaria_refused for the body).
  await expectDecisions(gw, 4);
  assert.equal(upstream.received.length, 0);
});

test('insufficient scope: 403 with the insufficient_scope challenge and the problem body', async (t) => {
  const { gw, upstream, nginx } = await behindNginx(t);
  const res = await send(nginx, '/v1/admin/users', bearer(await gw.token(...READER)));
  assert.equal(res.status, 403);
  const challenges = valuesOf(res.rawHeaders, 'www-authenticate');
  assert.equal(challenges.length, 1, challenges.join(' | '));
  assert.match(challenges[0] as string, /error="insufficient_scope", scope="admin"/);
  const body = problem(res);
  assert.equal(body.tipo, 'urn:portaria:problem:insufficient-scope');
  assert.equal(upstream.received.length, 0);
});

test('no route (404) and path tricks (400) reach the client with their status and problem body', async (t) => {
  const { gw, upstream, nginx } = await behindNginx(t);
  const auth = bearer(await gw.token());
  const missing = await send(nginx, '/v2/else', auth);
  assert.equal(missing.status, 404);
  assert.equal(problem(missing).tipo, 'urn:portaria:problem:not-found');
  // nginx resolves `..` for its own location matching, but asks about $request_uri, the
  // target as the client sent it: Portaria refuses it as proxy mode would.
  for (const uri of [
    '/v1/orders/../admin',
    '/v1/orders/%2e%2e/admin',
    '/v1//admin',
    '/v1/orders/%2F',
    '/v1/orders/./1',
  ]) {
    const res = await send(nginx, uri, auth);
    assert.equal(res.status, 400, uri);
    assert.equal(problem(res).tipo, 'urn:portaria:problem:invalid-path', uri);
  }
  // Above the root: nginx refuses it itself, before any decision.
  const above = await send(nginx, '/v1/../../admin', auth);
  assert.equal(above.status, 400);
  assert.equal(upstream.received.length, 0);
});

test('a revoked token is refused at once without the decision cache', async (t) => {
  const { gw, upstream, nginx } = await behindNginx(t);
  const token = await gw.token();
  assert.equal((await send(nginx, '/v1/orders/1', bearer(token))).status, 200);
  await gw.app.revoke(decodeJwt(token).jti as string);
  const res = await send(nginx, '/v1/orders/1', bearer(token));
  assert.equal(res.status, 401);
  assert.equal(problem(res).tipo, 'urn:portaria:problem:token-revoked');
  assert.equal(upstream.received.length, 1);
});

test('Portaria unreachable: nginx answers 502 and forwards nothing', async (t) => {
  // Port 1 on loopback: nothing listens there, so every connection is refused.
  const { gw, upstream, nginx } = await behindNginx(t, { decisions: '127.0.0.1:1' });
  const res = await send(nginx, '/v1/orders/1', bearer(await gw.token()));
  assert.equal(res.status, 502);
  assert.equal(upstream.received.length, 0);
});

test('without the double ask (no error_page): nginx’s own 401/403 with one challenge, 500 for the rest', async (t) => {
  const { gw, upstream, nginx } = await behindNginx(t, {
    edit: (config) => config.replace(/^ *error_page 401 403 500 = @portaria_refused;\n/m, ''),
  });
  const none = await send(nginx, '/v1/orders/1');
  assert.equal(none.status, 401);
  assert.equal(valuesOf(none.rawHeaders, 'www-authenticate').length, 1);
  assert.match(none.headers['content-type'] ?? '', /^text\/html/);
  const scope = await send(nginx, '/v1/admin/1', bearer(await gw.token(...READER)));
  assert.equal(scope.status, 403);
  const challenges = valuesOf(scope.rawHeaders, 'www-authenticate');
  assert.equal(challenges.length, 1, challenges.join(' | '));
  assert.match(challenges[0] as string, /insufficient_scope/);
  assert.equal((await send(nginx, '/v2/else', bearer(await gw.token()))).status, 500);
  // One decision each: nginx did not ask again.
  await expectDecisions(gw, 3);
  assert.equal(upstream.received.length, 0);
});

test('decision cache: Portaria marks nginx answers with X-Accel-Expires first, other entries and refusals not', async (t) => {
  const { gw } = await behindNginx(t, { file: CACHED, maxAgeSeconds: 2 });
  const token = await gw.token();
  const port = Number(new URL(gw.authorizerUrl).port);
  const ask = (path: string, headers: Record<string, string>) =>
    new Promise<Answer>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            rawHeaders: res.rawHeaders,
            body: '',
          }),
        );
      });
      req.on('error', reject);
      req.end();
    });
  const original = { 'x-original-method': 'GET', 'x-original-uri': '/v1/orders/1' };
  const allowed = await ask('/nginx', { ...bearer(token), ...original });
  assert.equal(allowed.status, 200);
  const names = allowed.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
  assert.equal(allowed.headers['x-accel-expires'], '2');
  assert.equal(allowed.headers['cache-control'], 'private, max-age=2');
  // nginx 1.22 honours X-Accel-Expires over `private` only when it comes first.
  assert.ok(names.indexOf('x-accel-expires') < names.indexOf('cache-control'), names.join(','));
  const refused = await ask('/nginx', original);
  assert.equal(refused.status, 401);
  assert.equal(refused.headers['x-accel-expires'], undefined);
  const traefik = await ask('/traefik', {
    ...bearer(token),
    'x-forwarded-method': 'GET',
    'x-forwarded-uri': '/v1/orders/1',
  });
  assert.equal(traefik.status, 200);
  assert.equal(traefik.headers['x-accel-expires'], undefined);
});

test('decision cache: reused for the same credentials only; a revoked token passes until it runs out', async (t) => {
  const maxAgeSeconds = 2;
  const { gw, upstream, nginx } = await behindNginx(t, { file: CACHED, maxAgeSeconds });
  const token = await gw.token();
  const reader = await gw.token(...READER);
  assert.equal((await send(nginx, '/v1/orders/1', bearer(token))).status, 200);
  // Revoked at once (the cached decision may run out a second after it was made).
  await gw.app.revoke(decodeJwt(token).jti as string);
  // The cached decision still lets the revoked token through, identity and all, and
  // Portaria is not asked …
  const cached = await send(nginx, '/v1/orders/1', bearer(token));
  assert.equal(cached.status, 200);
  assert.deepEqual(valuesOf(upstream.received[1]?.rawHeaders ?? [], 'x-client-id'), ['acme']);
  await expectDecisions(gw, 1);

  // Another token on the same request is decided by Portaria, with its own identity …
  assert.equal((await send(nginx, '/v1/orders/1', bearer(reader))).status, 200);
  await expectDecisions(gw, 2);
  assert.deepEqual(valuesOf(upstream.received[2]?.rawHeaders ?? [], 'x-client-id'), ['reader']);
  // … and so is that token on another path, or with another method.
  assert.equal((await send(nginx, '/v1/orders/2', bearer(reader))).status, 200);
  await expectDecisions(gw, 3);
  assert.equal((await send(nginx, '/v1/orders/1', bearer(reader), 'POST')).status, 200);
  await expectDecisions(gw, 4);
  assert.equal(decisionLines(gw)[3]?.['http.request.method'], 'POST');

  // … until it runs out (nginx counts whole seconds: by maxAgeSeconds + 1 after the
  // decision at the latest; the wait is bounded by that and a margin).
  const refused = await waitFor(
    'the cached decision to run out',
    async () => {
      const res = await send(nginx, '/v1/orders/1', bearer(token));
      return res.status === 200 ? undefined : res;
    },
    (maxAgeSeconds + 2) * 1000,
    100,
  );
  assert.equal(refused.status, 401);
  assert.equal(problem(refused).tipo, 'urn:portaria:problem:token-revoked');
  // Refusals are never cached.
  const again = await send(nginx, '/v1/orders/1', bearer(token));
  assert.equal(again.status, 401);
});
