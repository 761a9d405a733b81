/**
 * The OAuth 2.0 token endpoint as a client sees it: a real gateway on a loopback port, a
 * real upstream behind a route, real signed client assertions (jose), raw sockets where
 * the framing matters.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { decodeJwt, SignJWT } from 'jose';
import { JWT_BEARER_ASSERTION } from '../../src/oauth/clientAssertion.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type ClientSpec,
  DEFAULT_CLIENTS,
  type Gateway,
  startGateway,
} from '../helpers/fixture.js';
import { ecKey, type TestKey } from '../helpers/jwksServer.js';
import { scrape } from '../helpers/metrics.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { accessLineOf } from '../helpers/wait.js';

const TOKEN_ENDPOINT = 'https://portaria.test/oauth2/token';
const ODD_ID = 'part:ner %+ é';
const ODD_SECRET = 'p:a%s+s w/ö';
const SIGNER_KEY: TestKey = ecKey('signer-1');
const RESOURCE = 'https://api.partner.test/orders';

const CLIENTS: ClientSpec[] = [
  ...DEFAULT_CLIENTS,
  {
    id: ODD_ID,
    secret: ODD_SECRET,
    scopes: ['orders:read'],
    extra: { authMethods: ['client_secret_basic'] },
  },
  {
    id: 'signer',
    secret: '',
    scopes: ['orders:read', 'orders:write'],
    extra: {
      authMethods: ['private_key_jwt'],
      jwksFile: 'signer.jwks.json',
      audiences: ['partner-api', RESOURCE],
    },
  },
];

async function gateway(t: TestContext, settings: Record<string, unknown> = {}): Promise<Gateway> {
  const gw = await startGateway(t, {
    clients: CLIENTS,
    settings: (upstream) => ({
      routes: [{ id: 'writes', prefix: '/v1/writes', upstream, scopes: ['orders:write'] }],
      ...settings,
    }),
  });
  return gw;
}

// The key file is written before the gateway first reads it (on the first assertion).
async function withSignerKeys(gw: Gateway): Promise<Gateway> {
  await writeFile(join(gw.dir, 'signer.jwks.json'), JSON.stringify({ keys: [SIGNER_KEY.jwk] }));
  return gw;
}

function form(params: Record<string, string>): string {
  return new URLSearchParams(params).toString();
}

function basic(id: string, secret: string): string {
  const encode = (s: string) => new URLSearchParams({ x: s }).toString().slice(2);
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;
}

async function post(
  gw: Gateway,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: Record<string, unknown> }> {
  const res = await fetch(`${gw.url}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text === '' ? {} : JSON.parse(text) };
}

function assertion(
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: 'signer',
    sub: 'signer',
    aud: TOKEN_ENDPOINT,
    jti: crypto.randomUUID(),
    iat: now,
    exp: now + 60,
    ...claims,
  })
    .setProtectedHeader({ alg: 'ES256', kid: SIGNER_KEY.kid, ...header })
    .sign(SIGNER_KEY.privateKey);
}

const CLIENT_CREDENTIALS = { grant_type: 'client_credentials' };

function assertOAuthError(
  answer: { status: number; headers: Headers; json: Record<string, unknown> },
  status: number,
  error: string,
): void {
  assert.equal(answer.status, status, JSON.stringify(answer.json));
  assert.equal(answer.json.error, error);
  assert.equal(typeof answer.json.error_description, 'string');
  assert.deepEqual(Object.keys(answer.json).sort(), ['error', 'error_description']);
  assert.equal(answer.headers.get('content-type'), 'application/json');
  assert.equal(answer.headers.get('cache-control'), 'no-store');
  assert.equal(answer.headers.get('pragma'), 'no-cache');
}

describe('client credentials at /oauth2/token', () => {
  test('client_secret_basic with an id and secret holding : % + space and non-ASCII; the token works through a route', async (t) => {
    const gw = await gateway(t);
    const answer = await post(gw, form(CLIENT_CREDENTIALS), {
      authorization: basic(ODD_ID, ODD_SECRET),
    });
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.equal(answer.headers.get('cache-control'), 'no-store');
    assert.equal(answer.headers.get('pragma'), 'no-cache');
    assert.deepEqual(Object.keys(answer.json).sort(), [
      'access_token',
      'expires_in',
      'scope',
      'token_type',
    ]);
    assert.equal(answer.json.token_type, 'Bearer');
    assert.equal(answer.json.expires_in, 3600);
    assert.equal(answer.json.scope, 'orders:read');
    const token = answer.json.access_token as string;
    const claims = decodeJwt(token);
    assert.equal(claims.sub, ODD_ID);
    assert.equal(claims.aud, 'partner-api');
    const routed = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(routed.status, 200);
    await routed.arrayBuffer();
    const forwardedId = gw.upstream.received.at(-1)?.headers['x-client-id'];
    assert.equal(decodeURIComponent(forwardedId as string), ODD_ID);
  });

  test('client_secret_post, and the contract operation still answers for the same client', async (t) => {
    const gw = await gateway(t);
    const answer = await post(
      gw,
      form({ ...CLIENT_CREDENTIALS, client_id: CLIENT_ID, client_secret: CLIENT_SECRET }),
    );
    assert.equal(answer.status, 200);
    assert.equal(answer.json.scope, 'orders:read orders:write');
    assert.equal(typeof (await gw.token()), 'string');
  });

  test('private_key_jwt: accepted once, its replay refused', async (t) => {
    const gw = await withSignerKeys(await gateway(t));
    const jwt = await assertion();
    const body = form({
      ...CLIENT_CREDENTIALS,
      client_assertion_type: JWT_BEARER_ASSERTION,
      client_assertion: jwt,
    });
    const first = await post(gw, body);
    assert.equal(first.status, 200, JSON.stringify(first.json));
    assert.equal(decodeJwt(first.json.access_token as string).sub, 'signer');
    const replay = await post(gw, body);
    assertOAuthError(replay, 401, 'invalid_client');
    assert.equal(replay.headers.get('www-authenticate'), null, 'no Basic challenge without Basic');
    const line = await accessLineOf(gw.logs, replay.headers.get('x-request-id') as string);
    assert.equal(line['portaria.reason'], 'assertion-replayed');
  });

  const badAssertions: Record<string, () => Promise<string>> = {
    'for another audience': () => assertion({ aud: 'https://other.test/oauth2/token' }),
    expired: () => assertion({ exp: Math.floor(Date.now() / 1000) - 120 }),
    'with exp too far ahead': () => assertion({ exp: Math.floor(Date.now() / 1000) + 3600 }),
    'with alg none': async () => {
      const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
      const now = Math.floor(Date.now() / 1000);
      return `${enc({ alg: 'none', kid: SIGNER_KEY.kid })}.${enc({ iss: 'signer', sub: 'signer', aud: TOKEN_ENDPOINT, jti: 'n', exp: now + 60 })}.AA`;
    },
    'with HS256 keyed by the public key': async () => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({
        iss: 'signer',
        sub: 'signer',
        aud: TOKEN_ENDPOINT,
        jti: 'h',
        exp: now + 60,
      })
        .setProtectedHeader({ alg: 'HS256', kid: SIGNER_KEY.kid })
        .sign(Buffer.from(JSON.stringify(SIGNER_KEY.jwk)));
    },
  };
  for (const [name, make] of Object.entries(badAssertions)) {
    test(`refuses an assertion ${name} (401 invalid_client)`, async (t) => {
      const gw = await withSignerKeys(await gateway(t));
      const answer = await post(
        gw,
        form({
          ...CLIENT_CREDENTIALS,
          client_assertion_type: JWT_BEARER_ASSERTION,
          client_assertion: await make(),
        }),
      );
      assertOAuthError(answer, 401, 'invalid_client');
    });
  }

  test('unknown client and wrong secret: the same 401 with the Basic challenge', async (t) => {
    const gw = await gateway(t);
    const unknown = await post(gw, form(CLIENT_CREDENTIALS), {
      authorization: basic('nobody', CLIENT_SECRET),
    });
    const wrong = await post(gw, form(CLIENT_CREDENTIALS), {
      authorization: basic(CLIENT_ID, 'wrong'),
    });
    for (const answer of [unknown, wrong]) {
      assertOAuthError(answer, 401, 'invalid_client');
      assert.equal(answer.headers.get('www-authenticate'), 'Basic realm="portaria"');
    }
    assert.deepEqual(unknown.json, wrong.json);
  });

  test('Basic and client_secret_post in one request → invalid_request', async (t) => {
    const gw = await gateway(t);
    const answer = await post(
      gw,
      form({ ...CLIENT_CREDENTIALS, client_id: CLIENT_ID, client_secret: CLIENT_SECRET }),
      { authorization: basic(CLIENT_ID, CLIENT_SECRET) },
    );
    assertOAuthError(answer, 400, 'invalid_request');
  });

  test('grant types: another → unsupported_grant_type, none → invalid_request', async (t) => {
    const gw = await gateway(t);
    const auth = { authorization: basic(CLIENT_ID, CLIENT_SECRET) };
    assertOAuthError(
      await post(gw, form({ grant_type: 'password' }), auth),
      400,
      'unsupported_grant_type',
    );
    assertOAuthError(await post(gw, form({ scope: 'orders:read' }), auth), 400, 'invalid_request');
  });

  test('scope narrows the token (a route needing a dropped scope answers 403); more → invalid_scope', async (t) => {
    const gw = await gateway(t);
    const auth = { authorization: basic(CLIENT_ID, CLIENT_SECRET) };
    const narrowed = await post(gw, form({ ...CLIENT_CREDENTIALS, scope: 'orders:read' }), auth);
    assert.equal(narrowed.status, 200);
    assert.equal(narrowed.json.scope, 'orders:read');
    const token = narrowed.json.access_token as string;
    assert.equal(decodeJwt(token).scope, 'orders:read');
    const write = await fetch(`${gw.url}/v1/writes/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(write.status, 403);
    await write.arrayBuffer();
    const escalation = await post(
      gw,
      form({ ...CLIENT_CREDENTIALS, scope: 'orders:read admin' }),
      auth,
    );
    assertOAuthError(escalation, 400, 'invalid_scope');
  });

  test('resource (RFC 8707) selects aud among the client’s audiences; another → invalid_target', async (t) => {
    const gw = await withSignerKeys(await gateway(t));
    const jwtForm = async (extra: Record<string, string>) =>
      form({
        ...CLIENT_CREDENTIALS,
        client_assertion_type: JWT_BEARER_ASSERTION,
        client_assertion: await assertion(),
        ...extra,
      });
    const selected = await post(gw, await jwtForm({ resource: RESOURCE }));
    assert.equal(selected.status, 200, JSON.stringify(selected.json));
    assert.equal(decodeJwt(selected.json.access_token as string).aud, RESOURCE);
    assertOAuthError(
      await post(gw, await jwtForm({ resource: 'https://api.partner.test/admin' })),
      400,
      'invalid_target',
    );
    const plain = await post(
      gw,
      form({
        ...CLIENT_CREDENTIALS,
        resource: RESOURCE,
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
      }),
    );
    assertOAuthError(plain, 400, 'invalid_target');
    const twice = `${await jwtForm({ resource: RESOURCE })}&resource=${encodeURIComponent(RESOURCE)}`;
    assertOAuthError(await post(gw, twice), 400, 'invalid_target');
  });
});

describe('malformed requests at /oauth2/token', () => {
  test('GET → 405 with Allow: POST; JSON → 415; both problem details', async (t) => {
    const gw = await gateway(t);
    const get = await fetch(`${gw.url}/oauth2/token`);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    assert.equal(get.headers.get('content-type'), 'application/problem+json');
    await get.arrayBuffer();
    const json = await post(gw, JSON.stringify({ grant_type: 'client_credentials' }), {
      'content-type': 'application/json',
    });
    assert.equal(json.status, 415);
  });

  test('a body over token.bodyLimitBytes → 413 and the connection closes', async (t) => {
    const gw = await gateway(t, { token: { bodyLimitBytes: 256 } });
    const body = form({ ...CLIENT_CREDENTIALS, scope: 'x'.repeat(400) });
    const answer = await rawRequest(
      gw.url,
      `POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    assert.match(answer, /^HTTP\/1\.1 413 /);
    assert.match(answer, /\r\nconnection: close\r\n/i);
  });

  const malformed: Record<string, string> = {
    'a repeated parameter': 'grant_type=client_credentials&grant_type=client_credentials',
    'malformed percent-encoding': 'grant_type=client_credentials&scope=%zz',
    'bytes that are not UTF-8': 'grant_type=client_credentials&scope=%C3%28',
  };
  for (const [name, body] of Object.entries(malformed)) {
    test(`${name} → invalid_request`, async (t) => {
      const gw = await gateway(t);
      const answer = await post(gw, body, { authorization: basic(CLIENT_ID, CLIENT_SECRET) });
      assertOAuthError(answer, 400, 'invalid_request');
    });
  }

  test('two Authorization headers → invalid_request', async (t) => {
    const gw = await gateway(t);
    const body = form(CLIENT_CREDENTIALS);
    const auth = basic(CLIENT_ID, CLIENT_SECRET);
    const answer = await rawRequest(
      gw.url,
      `POST /oauth2/token HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nAuthorization: ${auth}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(answer, /"error":"invalid_request"/);
  });
});

describe('accounting at /oauth2/token', () => {
  test('access lines carry route oauth-token and the reason; metrics count outcomes; no secret anywhere', async (t) => {
    const gw = await gateway(t);
    const ok = await post(gw, form(CLIENT_CREDENTIALS), {
      authorization: basic(CLIENT_ID, CLIENT_SECRET),
    });
    const bad = await post(gw, form(CLIENT_CREDENTIALS), {
      authorization: basic(CLIENT_ID, 'wrong-secret-value'),
    });
    const access = await Promise.all(
      [ok, bad].map((a) => accessLineOf(gw.logs, a.headers.get('x-request-id') as string)),
    );
    assert.deepEqual(
      access.map((l) => [l['http.route'], l['http.response.status_code'], l['portaria.reason']]),
      [
        ['oauth-token', 200, undefined],
        ['oauth-token', 401, 'bad-secret'],
      ],
    );
    const text = await scrape(gw.adminUrl);
    assert.match(text, /^portaria_oauth_requests_total\{endpoint="token",outcome="issued"\} 1$/m);
    assert.match(
      text,
      /^portaria_oauth_requests_total\{endpoint="token",outcome="invalid_client"\} 1$/m,
    );
    assert.match(text, /^portaria_http_requests_total\{route="oauth-token"/m);
    for (const line of gw.logs) {
      assert.doesNotMatch(line, new RegExp(`${CLIENT_SECRET}|wrong-secret-value`));
    }
  });

  test('wrong secrets at /oauth2/token put the pair in back-off for the contract operation too', async (t) => {
    const gw = await gateway(t, {
      tokenLimits: {
        perAddress: { enabled: false },
        perClient: { enabled: false },
        failedSecretBackoff: { enabled: true, freeFailures: 0, baseDelayMs: 60_000 },
      },
    });
    const wrong = await post(gw, form(CLIENT_CREDENTIALS), {
      authorization: basic(CLIENT_ID, 'wrong'),
    });
    assertOAuthError(wrong, 401, 'invalid_client');
    const contract = await fetch(`${gw.url}/v1/authentication/accesstoken`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
    });
    assert.equal(contract.status, 429);
    assert.ok(Number(contract.headers.get('retry-after')) > 0);
    await contract.arrayBuffer();
  });
});

describe('configuration of /oauth2/token', () => {
  test('a reload of the clients file changes who may use private_key_jwt', async (t) => {
    const gw = await withSignerKeys(await gateway(t));
    const file = gw.config.clients.file;
    const data = JSON.parse(await readFile(file, 'utf8')) as { clients: Record<string, unknown>[] };
    const signer = data.clients.find((c) => c.id === 'signer') as Record<string, unknown>;
    signer.disabled = true;
    await writeFile(file, JSON.stringify(data));
    await gw.app.reload();
    const jwtBody = async () =>
      form({
        ...CLIENT_CREDENTIALS,
        client_assertion_type: JWT_BEARER_ASSERTION,
        client_assertion: await assertion(),
      });
    assertOAuthError(await post(gw, await jwtBody()), 401, 'invalid_client');
    signer.disabled = false;
    await writeFile(file, JSON.stringify(data));
    await gw.app.reload();
    assert.equal((await post(gw, await jwtBody())).status, 200);
  });

  test('another oauth.tokenPath moves the endpoint and its OpenAPI operation', async (t) => {
    const gw = await gateway(t, { oauth: { tokenPath: '/auth/token' } });
    const res = await fetch(`${gw.url}/auth/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: basic(CLIENT_ID, CLIENT_SECRET),
      },
      body: form(CLIENT_CREDENTIALS),
    });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const doc = (await (await fetch(`${gw.url}/v1/openapi.json`)).json()) as {
      paths: Record<string, { post?: { tags: string[] } }>;
    };
    assert.deepEqual(doc.paths['/auth/token']?.post?.tags, ['OAuth 2.0']);
    assert.equal(doc.paths['/oauth2/token'], undefined);
  });

  test('oauth.enabled false: the path is an ordinary protected path', async (t) => {
    const gw = await gateway(t, { oauth: { enabled: false } });
    const answer = await post(gw, form(CLIENT_CREDENTIALS), {
      authorization: basic(CLIENT_ID, CLIENT_SECRET),
    });
    assert.equal(answer.status, 401);
    assert.equal(answer.headers.get('content-type'), 'application/problem+json');
    const doc = (await (await fetch(`${gw.url}/v1/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    assert.equal(doc.paths['/oauth2/token'], undefined);
  });

  test('a WebSocket upgrade on the path is refused like on the other open paths', async (t) => {
    const gw = await gateway(t);
    const answer = await rawRequest(
      gw.url,
      'GET /oauth2/token HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
      2000,
    );
    assert.match(answer, /^HTTP\/1\.1 405 /);
    assert.match(answer, /\r\nallow: POST\r\n/i);
  });
});
