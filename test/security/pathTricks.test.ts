/**
 * Ambiguous request targets through a real gateway: every trick is refused before routing
 * (400 invalid-path) or lands on a protected path (401 without a token), and the upstream
 * receives nothing. Requests go over raw TCP so the target reaches the gateway byte for byte
 * (fetch would normalise `..`, `\` and `//` away).
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import {
  codePointName,
  INVISIBLE_IGNORABLES,
  percentEncoded,
} from '../helpers/defaultIgnorable.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type Gateway,
  startGateway,
  TOKEN_PATH,
} from '../helpers/fixture.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { headerOf, onlyResponse, type RawResponse, rawProblemOf } from '../helpers/rawResponse.js';
import { accessLineOf, parsedLogs, waitFor } from '../helpers/wait.js';

/** Routes with scopes and no default upstream: a path no route serves is 404 after auth. */
function scopedRoutes(upstreamUrl: string) {
  return {
    routes: [
      { id: 'orders', prefix: '/v1/orders', upstream: upstreamUrl, scopes: ['orders:read'] },
      { id: 'reports', prefix: '/v1/reports', upstream: upstreamUrl, scopes: ['reports:read'] },
    ],
    upstream: { default: null },
  };
}

function send(gw: Gateway, method: string, target: string, token: string | null, body = '') {
  const auth = token === null ? '' : `Authorization: Bearer ${token}\r\n`;
  const framing =
    body === ''
      ? ''
      : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`;
  return rawRequest(
    gw.url,
    `${method} ${target} HTTP/1.1\r\nHost: gateway.test\r\n${auth}${framing}Connection: close\r\n\r\n${body}`,
  ).then(onlyResponse);
}

async function expectProblem(
  gw: Gateway,
  res: RawResponse,
  status: number,
  code: string,
  instancePath: string,
  reason: string,
) {
  assert.equal(res.status, status);
  const requestId = headerOf(res, 'x-request-id');
  assert.ok(requestId);
  const problem = rawProblemOf(res);
  assert.deepEqual(Object.keys(problem).sort(), [
    'detalhe',
    'instancia',
    'status',
    'tipo',
    'titulo',
  ]);
  assert.equal(problem.tipo, `urn:portaria:problem:${code}`);
  assert.equal(problem.status, status);
  assert.equal(problem.instancia, `${instancePath}#${requestId}`);
  const line = await accessLineOf(gw.logs, requestId);
  assert.equal(line['http.response.status_code'], status);
  assert.equal(line['portaria.reason'], reason);
}

/** [target as sent on the request line, private reason]: refused before routing. */
const AMBIGUOUS: [string, string][] = [
  ['/v1/authentication/accesstoken/../../v1/orders', 'dot-segment'],
  ['/v1/orders/..%2f..%2fadmin', 'encoded'],
  ['/v1/%2e%2e/secret', 'encoded'],
  ['//v1/orders', 'empty-segment'],
  ['/v1/orders\\..\\x', 'backslash'],
  ['/v1/./orders', 'dot-segment'],
  ['/v1/orders/%00', 'encoded'],
  ['/v1/orders%2F1', 'encoded'],
  ['/v1/authentication/accesstoken%2f..', 'encoded'],
  ['/v1/orders/..;/admin', 'dot-segment'],
  ['/v1/authentication/accesstoken;x', 'path-parameter'],
  ['/v1/orders/%252e%252e/admin', 'double-encoded'],
  // `reports` behind an upstream that decodes twice, or decodes and parses again.
  ['/v1/%2572eports', 'double-encoded'],
  ['/v1/reports%3Fx', 'encoded'],
  ['/v1/reports%23x', 'encoded'],
  ['/v1/orders/%zz', 'bad-percent'],
  ['/v1/orders/%C0%AE%C0%AE/admin', 'not-utf8'],
  ['/v1/%6frders/1', 'encoded-unreserved'],
  ['/v1/%25%32%65%25%32%65/admin', 'encoded-unreserved'],
  ['/v1/orders#frag', 'fragment'],
  ['http://evil/v1/orders', 'not-origin-form'],
];

/** Look-alikes of the token operation path: protected paths, not the token operation. */
const LOOK_ALIKES: string[] = [
  '/v1/authentication/accesstoken/',
  '/V1/authentication/accesstoken',
  '/v1/authentication/AccessToken',
];

const credentials = JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });

describe('ambiguous request paths through the gateway', () => {
  for (const [target, reason] of AMBIGUOUS) {
    test(`${target} → 400 invalid-path with or without a token, nothing forwarded`, async (t) => {
      const gw = await startGateway(t, { settings: scopedRoutes });
      const token = await gw.token();
      const path = target.split('?')[0] as string;
      await expectProblem(
        gw,
        await send(gw, 'GET', target, null),
        400,
        'invalid-path',
        path,
        reason,
      );
      await expectProblem(
        gw,
        await send(gw, 'GET', target, token),
        400,
        'invalid-path',
        path,
        reason,
      );
      const post = await send(gw, 'POST', target, null, credentials);
      await expectProblem(gw, post, 400, 'invalid-path', path, reason);
      assert.equal(gw.upstream.received.length, 0);
    });
  }

  test('OPTIONS * → 400 invalid-path, nothing forwarded', async (t) => {
    const gw = await startGateway(t, { settings: scopedRoutes });
    const token = await gw.token();
    await expectProblem(
      gw,
      await send(gw, 'OPTIONS', '*', null),
      400,
      'invalid-path',
      '*',
      'not-origin-form',
    );
    await expectProblem(
      gw,
      await send(gw, 'OPTIONS', '*', token),
      400,
      'invalid-path',
      '*',
      'not-origin-form',
    );
    assert.equal(gw.upstream.received.length, 0);
  });

  for (const target of LOOK_ALIKES) {
    test(`${target} is a protected path: 401 without a token, 404 with one, never a token`, async (t) => {
      const gw = await startGateway(t, { settings: scopedRoutes });
      const token = await gw.token();
      const post = await send(gw, 'POST', target, null, credentials);
      await expectProblem(gw, post, 401, 'token-missing', target, 'no-authorization');
      assert.equal(
        headerOf(post, 'www-authenticate'),
        'Bearer realm="portaria", resource_metadata="https://portaria.test/.well-known/oauth-protected-resource"',
      );
      assert.doesNotMatch(post.body, /token_de_acesso/);
      await expectProblem(
        gw,
        await send(gw, 'GET', target, null),
        401,
        'token-missing',
        target,
        'no-authorization',
      );
      await expectProblem(
        gw,
        await send(gw, 'POST', target, token, credentials),
        404,
        'not-found',
        target,
        'no-route',
      );
      assert.equal(gw.upstream.received.length, 0);
    });
  }

  test('the token operation path with a query string is still the token operation', async (t) => {
    const gw = await startGateway(t, { settings: scopedRoutes });
    const res = await send(gw, 'POST', `${TOKEN_PATH}?x=1`, null, credentials);
    assert.equal(res.status, 200);
    assert.equal(headerOf(res, 'cache-control'), 'no-store');
    const body = JSON.parse(res.body) as Record<string, unknown>;
    assert.equal(body.tipo_de_token, 'Bearer');
    assert.equal(typeof body.token_de_acesso, 'string');
    assert.equal(gw.upstream.received.length, 0);
  });
});

/**
 * Demo-like routes: `reports` needs `reports:read`, and a scope-less default upstream serves
 * everything else from the same service. A token with only the orders scopes must not reach
 * the reports resource through any spelling of its path.
 */
function reportsBehindScope(upstreamUrl: string) {
  return {
    routes: [
      { id: 'orders', prefix: '/v1/orders', upstream: upstreamUrl, scopes: ['orders:read'] },
      { id: 'reports', prefix: '/v1/reports', upstream: upstreamUrl, scopes: ['reports:read'] },
    ],
    upstream: { default: { upstream: upstreamUrl } },
  };
}

async function ordersToken(t: TestContext) {
  const gw = await startGateway(t, { settings: reportsBehindScope });
  return { gw, token: await gw.token() };
}

describe('a route-scoped prefix cannot be bypassed', () => {
  /** [target, status, tipo code, private reason]. */
  const cases: [string, number, string, string][] = [
    ['/v1/reports', 403, 'insufficient-scope', 'insufficient-scope'],
    ['/v1/reports/1', 403, 'insufficient-scope', 'insufficient-scope'],
    ['/v1/reports/', 403, 'insufficient-scope', 'insufficient-scope'],
    ['/v1/reports?x=1', 403, 'insufficient-scope', 'insufficient-scope'],
    ['/v1/orders/../reports', 400, 'invalid-path', 'dot-segment'],
    ['/v1/orders/..%2freports', 400, 'invalid-path', 'encoded'],
    ['/v1/orders/%2e%2e/reports', 400, 'invalid-path', 'encoded'],
    ['/v1/orders/..;/reports', 400, 'invalid-path', 'dot-segment'],
    ['/v1/orders/.%2e/reports', 400, 'invalid-path', 'encoded'],
    ['/v1/orders\\..\\reports', 400, 'invalid-path', 'backslash'],
    ['/v1//reports', 400, 'invalid-path', 'empty-segment'],
    // `;` starts a path parameter (RFC 3986 §3.3): Tomcat/Spring serve `/v1/reports;x` and
    // `/v1;x/reports` as `/v1/reports`, so path parameters are refused before routing.
    ['/v1/reports;x', 400, 'invalid-path', 'path-parameter'],
    ['/v1/reports;jsessionid=1/2', 400, 'invalid-path', 'path-parameter'],
    ['/v1;x/reports', 400, 'invalid-path', 'path-parameter'],
    ['/v1/reports%3bx', 400, 'invalid-path', 'encoded'],
    // Prefixes ignore case: a case-insensitive upstream would serve these as /v1/reports.
    ['/V1/reports', 403, 'insufficient-scope', 'insufficient-scope'],
    ['/v1/REPORTS/1', 403, 'insufficient-scope', 'insufficient-scope'],
    ['/V1/Reports?x=1', 403, 'insufficient-scope', 'insufficient-scope'],
    // Suffix patterns (Spring up to 5.2 serves /reports.json as /reports) and trailing
    // dots and spaces (dropped by Windows/IIS) keep the route and its scopes.
    ['/v1/reports.json', 403, 'insufficient-scope', 'insufficient-scope'],
    ['/v1/reports.', 400, 'invalid-path', 'trailing-dot'],
    ['/v1/reports..', 400, 'invalid-path', 'trailing-dot'],
    ['/v1./reports', 400, 'invalid-path', 'trailing-dot'],
    ['/v1/reports%20', 400, 'invalid-path', 'trailing-space'],
    ['/v1%20/reports', 400, 'invalid-path', 'trailing-space'],
    // Characters a Unicode-normalising upstream folds: a full-width solidus, a no-break
    // space, a zero-width space.
    ['/v1%EF%BC%8Freports', 400, 'invalid-path', 'ambiguous-unicode'],
    ['/v1/reports%C2%A0', 400, 'invalid-path', 'ambiguous-unicode'],
    ['/v1/reports%E2%80%8B', 400, 'invalid-path', 'ambiguous-unicode'],
  ];
  for (const [target, status, code, reason] of cases) {
    test(`${target} with an orders-only token → ${status} ${code}, nothing forwarded`, async (t) => {
      const { gw, token } = await ordersToken(t);
      const path = target.split('?')[0] as string;
      await expectProblem(gw, await send(gw, 'GET', target, token), status, code, path, reason);
      assert.deepEqual(
        gw.upstream.received.map((r) => r.url),
        [],
      );
    });
  }

  test('/v1/reportsX is not the reports route: the default route forwards it verbatim', async (t) => {
    const { gw, token } = await ordersToken(t);
    const res = await send(gw, 'GET', '/v1/reportsX', token);
    assert.equal(res.status, 200);
    assert.deepEqual(
      gw.upstream.received.map((r) => r.url),
      ['/v1/reportsX'],
    );
    const line = await accessLineOf(gw.logs, headerOf(res, 'x-request-id') as string);
    assert.equal(line['http.route'], 'default');
  });

  test('/v1/ordersX is not the orders route either (segment boundary), and /v1/orders/1 is', async (t) => {
    const gw = await startGateway(t, { settings: scopedRoutes });
    const reader = await gw.token('reader', 'reader-secret-0123456789abcdefghijklmnopq');
    await expectProblem(
      gw,
      await send(gw, 'GET', '/v1/ordersX', reader),
      404,
      'not-found',
      '/v1/ordersX',
      'no-route',
    );
    const ok = await send(gw, 'GET', '/v1/orders/1', reader);
    assert.equal(ok.status, 200);
    assert.deepEqual(
      gw.upstream.received.map((r) => r.url),
      ['/v1/orders/1'],
    );
  });
});

describe('invisible code points cannot hide a scope-guarded prefix', () => {
  // `/v1/reports<U+034F>/x` is no prefix of the reports route, so the scope-less default
  // route would forward it; an upstream folding paths with NFKC_Casefold drops the
  // default-ignorable code point and serves `/v1/reports/x`.
  test('each one, percent-encoded and raw, with an orders-only token → 400, nothing forwarded', async (t) => {
    const { gw, token } = await ordersToken(t);
    const refused = new Set<string>();
    for (const codePoint of INVISIBLE_IGNORABLES) {
      const name = codePointName(codePoint);
      const res = await send(gw, 'GET', `/v1/reports${percentEncoded(codePoint)}/x`, token);
      assert.equal(res.status, 400, `${name} percent-encoded`);
      assert.equal(rawProblemOf(res).tipo, 'urn:portaria:problem:invalid-path', name);
      refused.add(headerOf(res, 'x-request-id') as string);

      // Raw UTF-8 octets on the request line (RFC 9112 §3.2 allows only ASCII there): the
      // HTTP parser refuses them before the path check, which refuses them too
      // (test/domain/requestPath.test.ts).
      const raw = await rawRequest(
        gw.url,
        Buffer.concat([
          Buffer.from('GET /v1/reports'),
          Buffer.from(String.fromCodePoint(codePoint)),
          Buffer.from(
            `/x HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
          ),
        ]),
      ).then(onlyResponse);
      assert.equal(raw.status, 400, `${name} raw`);
      assert.equal(rawProblemOf(raw).tipo, 'urn:portaria:problem:invalid-request', name);
    }
    assert.deepEqual(
      gw.upstream.received.map((r) => r.url),
      [],
    );
    const lines = await waitFor('every access line', () => {
      const found = parsedLogs(gw.logs).filter((l) =>
        refused.has(l['portaria.request_id'] as string),
      );
      return found.length === refused.size ? found : undefined;
    });
    assert.deepEqual(
      new Set(lines.map((l) => l['portaria.reason'])),
      new Set(['ambiguous-unicode']),
    );
  });
});
