import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { CLIENT_ID, CLIENT_SECRET, startGateway, TOKEN_PATH } from '../helpers/fixture.js';
import { bodyOf, rawRequest, statusOf } from '../helpers/rawHttp.js';
import { parsedLogs, waitFor } from '../helpers/wait.js';

const BODY = JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });
const head = (extra: string) =>
  `POST ${TOKEN_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${extra}\r\n`;
const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;

/** Writes `parts` one at a time, `gapMs` apart, and returns what came back once the peer ended. */
function slowRequest(url: string, parts: readonly string[], gapMs: number): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
    let i = 0;
    const next = (): void => {
      const part = parts[i++];
      if (part === undefined) return;
      socket.write(part);
      setTimeout(next, gapMs);
    };
    next();
  });
}

describe('the token operation reads its body', () => {
  test('a body arriving in several writes is read whole → 200', async (t) => {
    const gw = await startGateway(t);
    const raw = await slowRequest(
      gw.url,
      [
        head(`Content-Length: ${Buffer.byteLength(BODY)}\r\nConnection: close\r\n`),
        BODY.slice(0, 10),
        BODY.slice(10, 30),
        BODY.slice(30),
      ],
      30,
    );
    assert.equal(statusOf(raw), 200);
    assert.ok(JSON.parse(bodyOf(raw)).token_de_acesso);
  });

  test('a chunked body in several chunks is read whole → 200', async (t) => {
    const gw = await startGateway(t);
    const raw = await slowRequest(
      gw.url,
      [
        head('Transfer-Encoding: chunked\r\nConnection: close\r\n'),
        chunk(BODY.slice(0, 12)),
        chunk(BODY.slice(12)),
        '0\r\n\r\n',
      ],
      30,
    );
    assert.equal(statusOf(raw), 200);
    assert.ok(JSON.parse(bodyOf(raw)).token_de_acesso);
  });

  test('two requests on one keep-alive connection each get their token', async (t) => {
    const gw = await startGateway(t);
    const one = head(`Content-Length: ${Buffer.byteLength(BODY)}\r\n`) + BODY;
    const last = head(`Content-Length: ${Buffer.byteLength(BODY)}\r\nConnection: close\r\n`) + BODY;
    const raw = await rawRequest(gw.url, one + last);
    assert.equal(raw.match(/HTTP\/1\.1 200 /g)?.length, 2);
  });

  test('a chunked body over the limit, still arriving → 413 and the connection closed', async (t) => {
    const gw = await startGateway(t, { settings: () => ({ token: { bodyLimitBytes: 64 } }) });
    // The body's end never comes: the answer must not wait for it.
    const raw = await rawRequest(
      gw.url,
      head('Transfer-Encoding: chunked\r\n') + chunk('x'.repeat(100)),
    );
    assert.equal(statusOf(raw), 413);
    assert.match(raw, /connection: close/i);
    assert.match(bodyOf(raw), /payload-too-large/);
  });

  test('an empty body → 400, the connection kept', async (t) => {
    const gw = await startGateway(t);
    const raw = await rawRequest(
      gw.url,
      `${head('Content-Length: 0\r\n')}${head(`Content-Length: ${Buffer.byteLength(BODY)}\r\nConnection: close\r\n`)}${BODY}`,
    );
    assert.equal(statusOf(raw), 400);
    assert.match(raw, /HTTP\/1\.1 200 /);
  });

  test('a client leaving mid-body: its access line says the parser refused the cut request, the gateway keeps serving', async (t) => {
    const gw = await startGateway(t);
    const { hostname, port } = new URL(gw.url);
    await new Promise<void>((resolve) => {
      const socket = connect({ host: hostname, port: Number(port) }, () => {
        socket.write(`${head('Content-Length: 500\r\n')}{"clientId":`);
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 50);
      });
    });
    // Node's parser reports the body cut short (an invalid end of message): a 400 it
    // writes on the socket, which the access line reports.
    const line = await waitFor('the access line', () =>
      parsedLogs(gw.logs).find((l) => l.msg === 'request' && l['http.route'] === 'token'),
    );
    assert.equal(line['http.response.status_code'], 400);
    assert.equal(line['portaria.reason'], 'bad-framing');
    const res = await fetch(gw.url + TOKEN_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
    });
    assert.equal(res.status, 200);
  });
});
