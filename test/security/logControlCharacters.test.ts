/**
 * A caller's string never reaches a log line with a raw DEL, C1 control (U+0085 NEL ends
 * a line for Unicode-aware readers, U+009B CSI starts a terminal control sequence) or
 * U+2028/U+2029: the gateway's real log lines are read after requests carrying them in
 * the User-Agent and in client ids (JSON, form and Basic), over plain requests, token
 * requests and a WebSocket upgrade (the hand-written access line and pino's). JSON
 * escaping keeps the values as sent, and the bounds count the escaped bytes. (A request
 * target with raw bytes above 0x7e never reaches a log line: Node's parser refuses it.)
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ACCESS_BOUNDS } from '../../src/observability/accessLine.js';
import { type Gateway, startGateway, TOKEN_PATH } from '../helpers/fixture.js';
import { rawRequest, statusOf } from '../helpers/rawHttp.js';
import { type LogLine, waitFor } from '../helpers/wait.js';

/** What must never appear raw in a line. */
const READER_CONTROLS = /[\u007f-\u009f\u2028\u2029]/;
/** Every such character, as a header carries them (one byte each, read as Latin-1). */
const C1_BYTES = `curl/8 \u0085NEL\u009b31mCSI\u009d0;title\u009c`;

/** The raw line whose `portaria.request_id` is `id`, once written. */
function rawLineOf(gw: Gateway, id: string): Promise<string> {
  return waitFor(`the log line of ${id}`, () =>
    gw.logs.find((line) => line.includes(`"portaria.request_id":"${id}"`)),
  );
}

function checkedLine(line: string): LogLine {
  assert.doesNotMatch(line, READER_CONTROLS, `a raw reader control in ${JSON.stringify(line)}`);
  return JSON.parse(line) as LogLine;
}

function rawGet(gw: Gateway, target: string, id: string, headers: string[] = []): Promise<string> {
  return rawRequest(
    gw.url,
    Buffer.from(
      [
        `GET ${target} HTTP/1.1`,
        'Host: 127.0.0.1',
        `X-Request-Id: ${id}`,
        `User-Agent: ${C1_BYTES}`,
        ...headers,
        'Connection: close',
        '',
        '',
      ].join('\r\n'),
      'latin1',
    ),
  );
}

describe('reader controls in log lines', () => {
  test('a User-Agent with NEL, CSI, OSC and ST is escaped in the access line and comes back as sent', async (t) => {
    const gw = await startGateway(t);
    assert.equal(statusOf(await rawGet(gw, '/v1/orders/1', 'ua-c1')), 401);
    const line = await rawLineOf(gw, 'ua-c1');
    assert.ok(line.includes('\\u0085NEL\\u009b31mCSI'), line);
    assert.equal(checkedLine(line)['user_agent.original'], C1_BYTES);
  });

  test('a WebSocket upgrade refused without a token is logged (by pino) escaped', async (t) => {
    const gw = await startGateway(t);
    const answer = await rawGet(gw, '/v1/orders/ws', 'upgrade-c1', [
      'Upgrade: websocket',
      'Connection: Upgrade',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    ]);
    assert.equal(statusOf(answer), 401);
    const parsed = checkedLine(await rawLineOf(gw, 'upgrade-c1'));
    assert.equal(parsed['user_agent.original'], C1_BYTES);
  });

  test('token requests with DEL, U+2028, U+2029 and C1 controls in the client id (JSON, form, Basic) write none raw', async (t) => {
    const gw = await startGateway(t);
    const clientId = 'acme\u007f\u2028{"level":"fatal"}\u2029\u0085\u009b2J';
    const basic = Buffer.from(`${encodeURIComponent(clientId)}:${'x'.repeat(43)}`).toString(
      'base64',
    );
    const requests: [string, string, Record<string, string>, string][] = [
      [
        'token-json',
        TOKEN_PATH,
        { 'content-type': 'application/json' },
        JSON.stringify({ clientId, clientSecret: 'x'.repeat(43) }),
      ],
      [
        'token-form',
        '/oauth2/token',
        { 'content-type': 'application/x-www-form-urlencoded' },
        `grant_type=client_credentials&client_id=${encodeURIComponent(clientId)}&client_secret=x`,
      ],
      [
        'token-basic',
        '/oauth2/token',
        { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
        'grant_type=client_credentials',
      ],
    ];
    for (const [id, path, headers, body] of requests) {
      const res = await fetch(gw.url + path, {
        method: 'POST',
        headers: { ...headers, 'x-request-id': id, 'user-agent': 'agent\u0085' },
        body,
      });
      await res.arrayBuffer();
      assert.ok(res.status >= 400 && res.status < 500, `${id}: ${res.status}`);
      const parsed = checkedLine(await rawLineOf(gw, id));
      assert.equal(parsed['user_agent.original'], 'agent\u0085');
      // An unknown client's id is not logged at all: only an authenticated one is.
      assert.equal(parsed['portaria.client_id'], undefined);
      assert.equal(parsed['portaria.reason'], 'unknown-client');
    }
    for (const line of gw.logs) checkedLine(line);
  });

  test('a registered client id with U+2028 and U+2029 is escaped in its access lines', async (t) => {
    const id = 'partner\u2028{"level":"fatal"}\u2029b';
    const secret = 'separator-secret-0123456789abcdefghijklmno';
    const gw = await startGateway(t, { clients: [{ id, secret, scopes: ['orders:read'] }] });
    const token = await gw.token(id, secret);
    const res = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${token}`, 'x-request-id': 'separators' },
    });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const line = await rawLineOf(gw, 'separators');
    assert.ok(line.includes('partner\\u2028{\\"level\\":\\"fatal\\"}\\u2029b'), line);
    assert.equal(checkedLine(line)['portaria.client_id'], id);
    for (const written of gw.logs) checkedLine(written);
  });

  test('a User-Agent of C1 controls is cut to its bound counted after escaping', async (t) => {
    const gw = await startGateway(t);
    const agent = '\u009b'.repeat(1000);
    const res = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { 'user-agent': agent, 'x-request-id': 'ua-bound' },
    });
    await res.arrayBuffer();
    const line = await rawLineOf(gw, 'ua-bound');
    const parsed = checkedLine(line);
    const written = parsed['user_agent.original'] as string;
    // Six bytes each escaped (`\u009b`), where UTF-8 would take two.
    assert.equal(written, '\u009b'.repeat(Math.floor(ACCESS_BOUNDS.userAgent / 6)));
    assert.deepEqual(parsed['portaria.truncated'], ['user_agent.original']);
  });
});
