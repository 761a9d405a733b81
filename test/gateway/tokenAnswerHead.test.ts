import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { CLIENT_ID, CLIENT_SECRET, startGateway, TOKEN_PATH } from '../helpers/fixture.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { headerOf, onlyResponse, parseResponses } from '../helpers/rawResponse.js';
import { waitFor } from '../helpers/wait.js';

const BODY = JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });
const tokenRequest = (extra = '') =>
  `POST ${TOKEN_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
  `Content-Length: ${Buffer.byteLength(BODY)}\r\n${extra}\r\n${BODY}`;

/** The field names of a raw response head, in the order they were written. */
function fieldNames(raw: string): string[] {
  return raw
    .slice(0, raw.indexOf('\r\n\r\n'))
    .split('\r\n')
    .slice(1)
    .map((line) => line.slice(0, line.indexOf(':')).toLowerCase());
}

describe('the token answer head', () => {
  test('a token answer: its fields in order, X-Request-Id the caller’s', async (t) => {
    const gw = await startGateway(t);
    const raw = await rawRequest(
      gw.url,
      tokenRequest('X-Request-Id: partner-42\r\nConnection: close\r\n'),
    );
    const res = onlyResponse(raw);
    assert.equal(res.status, 200);
    assert.deepEqual(fieldNames(raw), [
      'x-request-id',
      'content-type',
      'content-length',
      'cache-control',
      'pragma',
      'date',
      'connection',
    ]);
    assert.equal(headerOf(res, 'x-request-id'), 'partner-42');
    assert.equal(headerOf(res, 'content-type'), 'application/json');
    assert.equal(Number(headerOf(res, 'content-length')), Buffer.byteLength(res.body));
    assert.equal(headerOf(res, 'cache-control'), 'no-store');
    assert.equal(headerOf(res, 'pragma'), 'no-cache');
    assert.ok(JSON.parse(res.body).token_de_acesso);
  });

  test('a refusal on the token path carries the request id too', async (t) => {
    const gw = await startGateway(t);
    const raw = await rawRequest(
      gw.url,
      `POST ${TOKEN_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nX-Request-Id: partner-43\r\nContent-Length: 2\r\nConnection: close\r\n\r\nxx`,
    );
    const res = onlyResponse(raw);
    assert.equal(res.status, 415);
    assert.equal(fieldNames(raw)[0], 'x-request-id');
    assert.equal(headerOf(res, 'x-request-id'), 'partner-43');
  });

  test('during the drain a token answer keeps its fields and adds Connection: close', async (t) => {
    const gw = await startGateway(t);
    const { hostname, port } = new URL(gw.url);
    const socket = connect({ host: hostname, port: Number(port) });
    socket.on('error', () => {});
    t.after(() => socket.destroy());
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    const closed = once(socket, 'close');
    socket.write(tokenRequest());
    await waitFor('the first answer', () =>
      parseResponses(received).length === 1 ? true : undefined,
    );
    assert.equal(headerOf(onlyResponse(received), 'connection'), 'keep-alive');
    received = '';
    const stopped = gw.app.shutdown();
    socket.write(tokenRequest('X-Request-Id: partner-44\r\n'));
    await closed;
    await stopped;
    const res = onlyResponse(received);
    assert.equal(res.status, 200);
    assert.equal(headerOf(res, 'connection'), 'close');
    assert.equal(headerOf(res, 'x-request-id'), 'partner-44');
    assert.equal(headerOf(res, 'cache-control'), 'no-store');
    assert.equal(headerOf(res, 'pragma'), 'no-cache');
    assert.ok(JSON.parse(res.body).token_de_acesso);
  });
});
