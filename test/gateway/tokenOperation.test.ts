import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { ManualClock } from '../../src/lib/clock.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  DEFAULT_CLIENTS,
  problemOf,
  startGateway,
  TOKEN_PATH,
} from '../helpers/fixture.js';
import { rawRequest, statusOf } from '../helpers/rawHttp.js';
import { accessLineOf, parsedLogs, waitFor } from '../helpers/wait.js';

function post(url: string, body: string, contentType = 'application/json', method = 'POST') {
  return fetch(url + TOKEN_PATH, { method, headers: { 'content-type': contentType }, body });
}

describe('token operation', () => {
  test('an unexpected failure is a bare 500 with the request id, logged as an error under it', async (t) => {
    // A clock at the end of JavaScript's date range: the token's expiry cannot be written
    // as an ISO date (RangeError), a failure no refusal of ours covers.
    const gw = await startGateway(t, { clock: new ManualClock(8.64e15 - 1000) });
    const res = await post(
      gw.url,
      JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
    );
    assert.equal(res.status, 500);
    assert.equal(await res.text(), '', 'no body: no stack, no message');
    assert.equal(res.headers.get('content-length'), '0');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const requestId = res.headers.get('x-request-id');
    assert.ok(requestId);
    const line = await waitFor('the error line', () =>
      parsedLogs(gw.logs).find(
        (l) => l['portaria.request_id'] === requestId && l.msg === 'request failed',
      ),
    );
    assert.equal(line.level, 'error');
    assert.equal(line['http.response.status_code'], 500);
    assert.equal(line['http.route'], 'token');
    assert.equal(line['exception.type'], 'RangeError');
    assert.ok(!JSON.stringify(line).includes(CLIENT_SECRET), 'the secret is not logged');

    // The gateway keeps serving.
    const jwks = await fetch(`${gw.url}/.well-known/jwks.json`);
    assert.equal(jwks.status, 200);
  });

  test('valid credentials get 200, no-store, the reference fields and an RFC 9068 JWT', async (t) => {
    const gw = await startGateway(t);
    const before = Math.floor(Date.now() / 1000);
    const res = await post(
      gw.url,
      JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
    );
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(res.headers.get('pragma'), 'no-cache');
    const body = (await res.json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), [
      'escopo',
      'expira_em',
      'expira_em_segundos',
      'tipo_de_token',
      'token_de_acesso',
    ]);
    assert.equal(body.tipo_de_token, 'Bearer');
    assert.equal(body.expira_em_segundos, 3600);
    assert.equal(body.escopo, 'orders:read orders:write');
    const token = body.token_de_acesso as string;
    const header = decodeProtectedHeader(token);
    assert.equal(header.typ, 'at+jwt');
    assert.equal(header.alg, 'ES256');
    assert.equal(header.kid, gw.keyRing.signingKey.kid);
    const claims = decodeJwt(token);
    assert.equal(claims.iss, 'https://portaria.test');
    assert.equal(claims.sub, CLIENT_ID);
    assert.equal(claims.client_id, CLIENT_ID);
    assert.equal(claims.aud, 'partner-api');
    assert.equal(claims.scope, 'orders:read orders:write');
    assert.equal(typeof claims.jti, 'string');
    assert.ok((claims.iat as number) >= before);
    assert.equal(claims.nbf, claims.iat);
    assert.equal((claims.exp as number) - (claims.iat as number), 3600);
    assert.equal(body.expira_em, new Date((claims.exp as number) * 1000).toISOString());
    assert.match(body.expira_em as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // Verifiable by a third party from the published key set.
    const jwks = (await (await fetch(`${gw.url}/.well-known/jwks.json`)).json()) as {
      keys: object[];
    };
    const { createLocalJWKSet } = await import('jose');
    const verified = await jwtVerify(token, createLocalJWKSet(jwks as never), { typ: 'at+jwt' });
    assert.equal(verified.payload.sub, CLIENT_ID);
  });

  test('every token gets a fresh jti', async (t) => {
    const gw = await startGateway(t);
    const ids = new Set<unknown>();
    for (let i = 0; i < 5; i++) ids.add(decodeJwt(await gw.token()).jti);
    assert.equal(ids.size, 5);
  });

  test('a per-client lifetime overrides the global one', async (t) => {
    const gw = await startGateway(t, {
      clients: [
        {
          id: 'short',
          secret: 'short-secret-0123456789abcdefghijklmno',
          scopes: ['a'],
          lifetimeSeconds: 120,
        },
      ],
    });
    const res = await post(
      gw.url,
      JSON.stringify({ clientId: 'short', clientSecret: 'short-secret-0123456789abcdefghijklmno' }),
    );
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal(body.expira_em_segundos, 120);
    const claims = decodeJwt(body.token_de_acesso as string);
    assert.equal((claims.exp as number) - (claims.iat as number), 120);
  });

  test('the guide field set is emitted when configured', async (t) => {
    const gw = await startGateway(t, {
      settings: () => ({ token: { responseFields: 'guide', lifetimeSeconds: 900 } }),
    });
    const res = await post(
      gw.url,
      JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
    );
    const body = (await res.json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), [
      'accesstoken',
      'expiresAt',
      'expiresIn',
      'scope',
      'tokenType',
    ]);
    assert.equal(body.expiresIn, 900);
    assert.equal(body.tokenType, 'Bearer');
  });

  test('a charset parameter on application/json is accepted', async (t) => {
    const gw = await startGateway(t);
    const res = await post(
      gw.url,
      JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
      'Application/JSON; charset=UTF-8',
    );
    assert.equal(res.status, 200);
  });

  const badBodies: [string, string, string][] = [
    ['not JSON', '{"clientId": "acme",', 'The request body is not valid JSON.'],
    ['a JSON array', '[]', 'The request body must be a JSON object.'],
    ['a JSON string', '"acme"', 'The request body must be a JSON object.'],
    ['null', 'null', 'The request body must be a JSON object.'],
    ['an empty body', '', 'The request body is not valid JSON.'],
    ['missing clientId', '{"clientSecret":"x"}', 'clientId is required.'],
    ['missing clientSecret', '{"clientId":"acme"}', 'clientSecret is required.'],
    ['empty clientId', '{"clientId":"","clientSecret":"x"}', 'clientId must not be empty.'],
    [
      'empty clientSecret',
      '{"clientId":"acme","clientSecret":""}',
      'clientSecret must not be empty.',
    ],
    ['numeric clientId', '{"clientId":42,"clientSecret":"x"}', 'clientId must be a string.'],
    [
      'null clientSecret',
      '{"clientId":"acme","clientSecret":null}',
      'clientSecret must be a string.',
    ],
    [
      'object clientSecret',
      '{"clientId":"acme","clientSecret":{"a":1}}',
      'clientSecret must be a string.',
    ],
    [
      'an extra property',
      '{"clientId":"acme","clientSecret":"x","scope":"all"}',
      'Property "scope" is not allowed.',
    ],
    [
      'a __proto__ key',
      '{"clientId":"acme","clientSecret":"x","__proto__":{"admin":true}}',
      'Property "__proto__" is not allowed.',
    ],
    [
      'a constructor key',
      '{"clientId":"acme","clientSecret":"x","constructor":{"prototype":{"admin":true}}}',
      'Property "constructor" is not allowed.',
    ],
    [
      'a duplicate clientId',
      '{"clientId":"evil","clientSecret":"x","clientId":"acme"}',
      'Property "clientId" appears more than once.',
    ],
    [
      'a duplicate key spelled with an escape',
      '{"clientId":"evil","clientSecret":"x","client\\u0049d":"acme"}',
      'Property "clientId" appears more than once.',
    ],
  ];
  for (const [name, body, detail] of badBodies) {
    test(`${name} → 400 problem details naming the field`, async (t) => {
      const gw = await startGateway(t);
      const res = await post(gw.url, body);
      assert.equal(res.status, 400);
      const problem = await problemOf(res);
      assert.equal(problem.tipo, 'urn:portaria:problem:invalid-request');
      assert.equal(problem.titulo, 'Invalid request');
      assert.equal(problem.status, 400);
      assert.equal(problem.detalhe, detail);
      assert.match(problem.instancia as string, /^\/v1\/authentication\/accesstoken#[\w-]+$/);
      assert.equal(({} as Record<string, unknown>).admin, undefined, 'no prototype pollution');
    });
  }

  test('unknown client, wrong secret and disabled client get the same 401 body', async (t) => {
    const gw = await startGateway(t);
    const attempts = [
      { clientId: 'nobody', clientSecret: CLIENT_SECRET },
      { clientId: CLIENT_ID, clientSecret: 'wrong' },
      { clientId: 'gone', clientSecret: 'gone-secret-0123456789abcdefghijklmnopqrs' },
    ];
    const bodies = [];
    for (const attempt of attempts) {
      const res = await post(gw.url, JSON.stringify(attempt));
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('cache-control'), 'no-store');
      const problem = await problemOf(res);
      delete problem.instancia;
      bodies.push(problem);
    }
    assert.deepEqual(bodies[0], {
      tipo: 'urn:portaria:problem:invalid-client',
      titulo: 'Client authentication failed',
      status: 401,
      detalhe: 'The client credentials were not accepted.',
    });
    assert.deepEqual(bodies[1], bodies[0]);
    assert.deepEqual(bodies[2], bodies[0]);
    // The reasons differ only in the log (access lines are written asynchronously).
    const reasons = await waitFor('three token access lines', () => {
      const lines = parsedLogs(gw.logs).filter((l) => l['http.route'] === 'token');
      return lines.length === 3 ? lines.map((l) => l['portaria.reason']) : undefined;
    });
    assert.deepEqual(reasons, ['unknown-client', 'bad-secret', 'disabled-client']);
  });

  test('a client allowing private_key_jwt only is refused here even with a secret it still has', async (t) => {
    const keyOnlySecret = 'keyonly-secret-0123456789abcdefghijklmnop';
    const gw = await startGateway(t, {
      clients: [
        ...DEFAULT_CLIENTS,
        {
          id: 'keyonly',
          secret: keyOnlySecret,
          scopes: ['orders:read'],
          extra: { authMethods: ['private_key_jwt'], jwksFile: 'keyonly.jwks.json' },
        },
      ],
    });
    const res = await post(
      gw.url,
      JSON.stringify({ clientId: 'keyonly', clientSecret: keyOnlySecret }),
    );
    assert.equal(res.status, 401);
    const problem = await problemOf(res);
    assert.equal(problem.detalhe, 'The client credentials were not accepted.');
    const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') as string);
    assert.equal(line['portaria.reason'], 'auth-method-not-allowed');
  });

  const wrongTypes = [
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/json; charset=latin1',
    'application/jsonx',
    '',
  ];
  for (const type of wrongTypes) {
    test(`Content-Type "${type}" → 415`, async (t) => {
      const gw = await startGateway(t);
      const res = await fetch(gw.url + TOKEN_PATH, {
        method: 'POST',
        headers: type === '' ? {} : { 'content-type': type },
        body:
          type === ''
            ? new Uint8Array(Buffer.from('{}'))
            : JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
      });
      assert.equal(res.status, 415);
      assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:unsupported-media-type');
    });
  }

  test('a compressed body → 415', async (t) => {
    const gw = await startGateway(t);
    const res = await fetch(gw.url + TOKEN_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: 'xx',
    });
    assert.equal(res.status, 415);
  });

  for (const method of ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
    test(`${method} on the token path → 405 with Allow: POST`, async (t) => {
      const gw = await startGateway(t);
      const res = await fetch(gw.url + TOKEN_PATH, { method });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'POST');
      assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:method-not-allowed');
    });
  }

  test('a declared body over the limit → 413 without reading it, connection closed', async (t) => {
    const gw = await startGateway(t);
    const raw = await rawRequest(
      gw.url,
      `POST ${TOKEN_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{"clientId":`,
    );
    assert.equal(statusOf(raw), 413);
    assert.match(raw, /connection: close/i);
    assert.match(raw, /payload-too-large/);
  });

  test('a chunked body that grows over the limit → 413', async (t) => {
    const gw = await startGateway(t, { settings: () => ({ token: { bodyLimitBytes: 1024 } }) });
    const big = JSON.stringify({ clientId: CLIENT_ID, clientSecret: 'x'.repeat(5000) });
    const res = await fetch(gw.url + TOKEN_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(big));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    assert.equal(res.status, 413);
  });

  test('a body that is not UTF-8 → 400', async (t) => {
    const gw = await startGateway(t);
    const res = await fetch(gw.url + TOKEN_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    });
    assert.equal(res.status, 400);
    assert.equal((await problemOf(res)).detalhe, 'The request body is not valid UTF-8.');
  });

  test('credentials in a header or query are not accepted: only the JSON body counts', async (t) => {
    const gw = await startGateway(t);
    const res = await fetch(
      `${gw.url}${TOKEN_PATH}?clientId=${CLIENT_ID}&clientSecret=${CLIENT_SECRET}`,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`,
        },
        body: '{}',
      },
    );
    assert.equal(res.status, 400);
    assert.equal((await problemOf(res)).detalhe, 'clientId is required.');
  });

  test('the token operation is never forwarded upstream', async (t) => {
    const gw = await startGateway(t);
    await gw.token();
    await post(gw.url, '{}');
    await fetch(gw.url + TOKEN_PATH);
    assert.equal(gw.upstream.received.length, 0);
  });
});
