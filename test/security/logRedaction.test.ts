/**
 * The log is a contract (the logging contract): at the most verbose level (`trace`), after a
 * session of token requests, good and bad bearer tokens, wrong secrets, oversized and
 * malformed bodies, Basic credentials and cookies, no log line carries a secret, a token,
 * an Authorization value, a secret hash or a cookie; every request has exactly one access
 * line with its fixed fields, refusals name their private reason, and every line is JSON.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type Gateway,
  startGateway,
  TOKEN_PATH,
} from '../helpers/fixture.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { headerOf, onlyResponse } from '../helpers/rawResponse.js';
import { type LogLine, parsedLogs, waitFor } from '../helpers/wait.js';

const READER_SECRET = 'reader-secret-0123456789abcdefghijklmnopq';
const GONE_SECRET = 'gone-secret-0123456789abcdefghijklmnopqrs';
const WRONG_SECRET = 'wrong-secret-ZYXWVUTSRQPONMLKJIHGFEDCBA98';
const COOKIE_VALUE = 'session-cookie-value-5f3c9a1b7e2d4c6a';
const BASIC = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`;
const BODY_LIMIT = 256;
/** A user agent written to look like more fields of the line. */
const FORGED_UA =
  'curl/8", "portaria.client_id":"admin", "http.response.status_code":200, "x":"\u00e9\tend';

interface Sent {
  readonly what: string;
  readonly requestId: string;
  readonly status: number;
}

/** Runs the session and returns every request made (with its id and status) and every secret. */
async function session(gw: Gateway) {
  const sent: Sent[] = [];
  const secrets: [string, string][] = [
    ['client secret', CLIENT_SECRET],
    ['reader secret', READER_SECRET],
    ['disabled client secret', GONE_SECRET],
    ['wrong secret', WRONG_SECRET],
    ['cookie value', COOKIE_VALUE],
    ['Basic credentials', BASIC],
    ['Basic credentials (base64 part)', BASIC.slice(6)],
  ];

  async function record(what: string, res: Response) {
    await res.arrayBuffer();
    sent.push({ what, requestId: res.headers.get('x-request-id') ?? '', status: res.status });
    return res;
  }
  const tokenRequest = (what: string, body: string) =>
    fetch(gw.url + TOKEN_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    }).then((res) => record(what, res));
  const credentials = (clientId: string, clientSecret: string, extra = {}) =>
    JSON.stringify({ clientId, clientSecret, ...extra });
  const get = (what: string, headers: Record<string, string>, path = '/v1/orders/1') =>
    fetch(gw.url + path, { headers }).then((res) => record(what, res));

  const tokens: string[] = [];
  for (const [id, secret] of [
    [CLIENT_ID, CLIENT_SECRET],
    ['reader', READER_SECRET],
  ] as const) {
    const res = await fetch(gw.url + TOKEN_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: credentials(id, secret),
    });
    const body = (await res.json()) as { token_de_acesso: string };
    sent.push({
      what: `token for ${id}`,
      requestId: res.headers.get('x-request-id') ?? '',
      status: res.status,
    });
    tokens.push(body.token_de_acesso);
  }
  const [token = '', readerToken = ''] = tokens;
  const [header, , signature] = token.split('.');
  const tampered = `${header}.${Buffer.from('{"sub":"admin"}').toString('base64url')}.${signature}`;

  await tokenRequest('wrong secret', credentials(CLIENT_ID, WRONG_SECRET));
  await tokenRequest('unknown client with a real secret', credentials('nobody', CLIENT_SECRET));
  await tokenRequest('disabled client', credentials('gone', GONE_SECRET));
  await tokenRequest(
    'secret in an unknown property',
    credentials(CLIENT_ID, CLIENT_SECRET, { note: CLIENT_SECRET }),
  );
  await tokenRequest(
    'secret as an unknown property name',
    credentials(CLIENT_ID, CLIENT_SECRET, { [READER_SECRET]: 1 }),
  );
  await tokenRequest(
    'invalid JSON around the secret',
    `{"clientId":"acme","clientSecret":"${CLIENT_SECRET}",}`,
  );
  await tokenRequest(
    'secret as a number field',
    `{"clientId":"acme","clientSecret":1,"x":"${CLIENT_SECRET}"}`,
  );
  const tooLarge = `{"clientId":"acme","clientSecret":"${CLIENT_SECRET.repeat(20)}"}`;
  const raw = onlyResponse(
    await rawRequest(
      gw.url,
      `POST ${TOKEN_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${tooLarge.length}\r\nConnection: close\r\n\r\n${tooLarge}`,
    ),
  );
  sent.push({
    what: 'too-large body',
    requestId: headerOf(raw, 'x-request-id') ?? '',
    status: raw.status,
  });

  await get('valid token', { authorization: `Bearer ${token}` });
  await get('reader token', { authorization: `Bearer ${readerToken}` });
  await get('tampered token', { authorization: `Bearer ${tampered}` });
  await get('garbage token', { authorization: 'Bearer a.b.c' });
  await get('Basic credentials', { authorization: BASIC });
  await get('cookie with a token', {
    authorization: `Bearer ${token}`,
    cookie: `sid=${COOKIE_VALUE}`,
  });
  await get('cookie without a token', { cookie: `sid=${COOKIE_VALUE}` });
  await get('token in the query string', {}, `/v1/orders?access_token=${readerToken}`);
  await get('insufficient scope', { authorization: `Bearer ${readerToken}` }, '/v1/reports/1');
  await get('a user agent forging fields', { 'user-agent': FORGED_UA });
  await get(
    'secrets in the query string of a forwarded request',
    { authorization: `Bearer ${token}` },
    `/v1/orders/1?client_secret=${READER_SECRET}&token=${readerToken}`,
  );

  for (const t of [token, readerToken, tampered]) {
    const [, p = '', s = ''] = t.split('.');
    secrets.push(['a token', t], ['a token payload', p], ['a token signature', s]);
  }
  secrets.push(
    ['a query string', `access_token=${readerToken.slice(0, 8)}`],
    ['a query string', `client_secret=${READER_SECRET.slice(0, 4)}`],
  );
  const clientsFile = JSON.parse(await readFile(join(gw.dir, 'clients.json'), 'utf8')) as {
    clients: { secrets: { hash: string }[] }[];
  };
  for (const client of clientsFile.clients) {
    for (const { hash } of client.secrets) {
      secrets.push(['a secret hash', hash], ['a secret hash digest', hash.split(':').pop() ?? '']);
    }
  }
  return { sent, secrets };
}

function accessLines(lines: LogLine[]): LogLine[] {
  return lines.filter((l) => l.msg === 'request' || l.msg === 'request failed');
}

describe('log redaction at level trace', () => {
  test('no secret, token, Authorization value, secret hash or cookie reaches any log line', async (t) => {
    const gw = await startGateway(t, {
      settings: (u) => ({
        log: { level: 'trace' },
        token: { bodyLimitBytes: BODY_LIMIT },
        routes: [{ id: 'reports', prefix: '/v1/reports', upstream: u, scopes: ['reports:read'] }],
      }),
    });
    assert.equal(gw.config.log.level, 'trace');
    const { sent, secrets } = await session(gw);
    await waitFor('every access line', () =>
      accessLines(parsedLogs(gw.logs)).length >= sent.length ? true : undefined,
    );
    assert.ok(secrets.length > 20);
    for (const line of gw.logs) {
      for (const [name, value] of secrets) {
        assert.ok(value.length >= 16, `${name} is long enough to search for`);
        assert.ok(!line.includes(value), `${name} appears in the log: ${line}`);
      }
    }
  });

  test('each request has exactly one JSON access line with its request id, method, route, path, status, duration, peer, sizes and user agent', async (t) => {
    const gw = await startGateway(t, {
      settings: (u) => ({
        log: { level: 'trace' },
        token: { bodyLimitBytes: BODY_LIMIT },
        routes: [{ id: 'reports', prefix: '/v1/reports', upstream: u, scopes: ['reports:read'] }],
      }),
    });
    const { sent } = await session(gw);
    const expected = [
      ['token for acme', 200],
      ['token for reader', 200],
      ['wrong secret', 401],
      ['unknown client with a real secret', 401],
      ['disabled client', 401],
      ['secret in an unknown property', 400],
      ['secret as an unknown property name', 400],
      ['invalid JSON around the secret', 400],
      ['secret as a number field', 400],
      ['too-large body', 413],
      ['valid token', 200],
      ['reader token', 200],
      ['tampered token', 401],
      ['garbage token', 401],
      ['Basic credentials', 401],
      ['cookie with a token', 200],
      ['cookie without a token', 401],
      ['token in the query string', 401],
      ['insufficient scope', 403],
      ['a user agent forging fields', 401],
      ['secrets in the query string of a forwarded request', 200],
    ];
    assert.deepEqual(
      sent.map((s) => [s.what, s.status]),
      expected,
    );

    const lines = await waitFor('every access line', () => {
      const all = parsedLogs(gw.logs);
      return accessLines(all).length >= sent.length ? all : undefined;
    });
    const access = accessLines(lines);
    assert.equal(access.length, sent.length);
    for (const request of sent) {
      const mine = access.filter((l) => l['portaria.request_id'] === request.requestId);
      assert.equal(mine.length, 1, `one access line for ${request.what}`);
      const line = mine[0] as LogLine;
      assert.equal(line['http.response.status_code'], request.status, request.what);
      assert.equal(typeof line['http.request.method'], 'string');
      assert.match(
        line['http.route'] as string,
        /^(token|default|reports|unmatched)$/,
        request.what,
      );
      assert.equal(typeof line['portaria.duration_ms'], 'number');
      assert.ok((line['portaria.duration_ms'] as number) >= 0);
      if (request.status >= 400) {
        assert.equal(typeof line['portaria.reason'], 'string', `${request.what} carries a reason`);
        assert.ok((line['portaria.reason'] as string).length > 0);
      } else {
        assert.equal(line['portaria.reason'], undefined, request.what);
      }
      if (request.status === 401) assert.equal(line.level, 'info', request.what);
    }
    const tokenLines = access.filter((l) => l['http.route'] === 'token');
    assert.equal(tokenLines.length, 10);
    assert.deepEqual(
      access
        .filter((l) => l['http.response.status_code'] === 200 && l['http.route'] === 'default')
        .map((l) => l['portaria.client_id']),
      ['acme', 'reader', 'acme', 'acme'],
    );
    // The fields added to the line: the path without its query, the peer, the user agent,
    // the bytes, the upstream's time on forwarded requests.
    for (const line of access) {
      const what = String(line['portaria.request_id']);
      assert.match(line['url.path'] as string, /^\/v1\/[a-z/0-9]+$/, what);
      assert.equal(line['network.peer.address'], '127.0.0.1', what);
      assert.equal(line['client.address'], '127.0.0.1', what);
      assert.ok((line['http.request.size'] as number) > 0, what);
      assert.ok((line['http.response.size'] as number) > 0, what);
      assert.equal(line['portaria.truncated'], undefined, what);
      const forwarded = line['http.response.status_code'] === 200 && line['http.route'] !== 'token';
      assert.equal(
        typeof line['portaria.upstream.duration_ms'],
        forwarded ? 'number' : 'undefined',
        what,
      );
    }
    assert.ok(access.some((l) => l['user_agent.original'] === 'node'));
    const forged = access.find((l) => l['user_agent.original'] === FORGED_UA);
    assert.ok(forged, 'the forged user agent is one value');
    assert.deepEqual(
      [forged['http.response.status_code'], forged['portaria.client_id']],
      [401, undefined],
    );
  });
});
