/**
 * Header spoofing through a real gateway: identity headers, `X-Forwarded-*`, hop-by-hop
 * fields, `Authorization` forwarding and `X-Request-Id`. Requests go over raw TCP so that
 * duplicates, odd casing and `_` spellings reach the gateway exactly as written.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import { decodeJwt } from 'jose';
import { type Gateway, type ReceivedRequest, startGateway } from '../helpers/fixture.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { headerOf, onlyResponse } from '../helpers/rawResponse.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** GET with the given extra header lines (each `Name: value`), over raw TCP. */
function get(gw: Gateway, token: string | null, lines: string[], path = '/v1/orders/1') {
  const auth = token === null ? [] : [`Authorization: Bearer ${token}`];
  const head = [`GET ${path} HTTP/1.1`, 'Host: gateway.test', ...auth, ...lines];
  if (!lines.some((l) => /^connection:/i.test(l))) head.push('Connection: close');
  return rawRequest(gw.url, `${head.join('\r\n')}\r\n\r\n`).then(onlyResponse);
}

/** Every value the upstream received under `name`, reading `_` as `-` and ignoring case. */
function valuesOf(seen: ReceivedRequest, name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < seen.rawHeaders.length; i += 2) {
    const raw = (seen.rawHeaders[i] as string).toLowerCase().replaceAll('_', '-');
    if (raw === name) out.push(seen.rawHeaders[i + 1] as string);
  }
  return out;
}

function onlyReceived(gw: Gateway): ReceivedRequest {
  assert.equal(gw.upstream.received.length, 1);
  return gw.upstream.received[0] as ReceivedRequest;
}

async function gatewayAndToken(t: TestContext, settings?: (u: string) => Record<string, unknown>) {
  const gw = await startGateway(t, settings ? { settings } : {});
  const token = await gw.token();
  return { gw, token, jti: decodeJwt(token).jti as string };
}

function assertIdentity(seen: ReceivedRequest, jti: string) {
  assert.deepEqual(valuesOf(seen, 'x-client-id'), ['acme']);
  assert.deepEqual(valuesOf(seen, 'x-token-scope'), ['orders:read orders:write']);
  assert.deepEqual(valuesOf(seen, 'x-token-jti'), [jti]);
}

/** Spoofed identity header lines, every case and `_` spelling. */
const SPOOFED_IDENTITY: string[] = [
  'X-Client-Id: evil',
  'x-client-id: evil',
  'X_Client_Id: evil',
  'x_client-id: evil',
  'X-CLIENT_ID: evil',
  'x-Client_id: evil',
  'X-Token-Scope: admin',
  'x-token-scope: admin',
  'X_Token_Scope: admin',
  'x_token-scope: admin',
  'X-TOKEN_scope: admin',
  'X-Token-Jti: fake',
  'x-token-jti: fake',
  'X_Token_Jti: fake',
  'x_token_jti: fake',
  'X-token_JTI: fake',
];

describe('identity headers cannot be spoofed', () => {
  for (const line of SPOOFED_IDENTITY) {
    test(`"${line}" is replaced by the token's claim`, async (t) => {
      const { gw, token, jti } = await gatewayAndToken(t);
      const res = await get(gw, token, [line]);
      assert.equal(res.status, 200);
      assertIdentity(onlyReceived(gw), jti);
    });
  }

  test('all spellings at once, duplicated: the upstream sees exactly one value of each', async (t) => {
    const { gw, token, jti } = await gatewayAndToken(t);
    const res = await get(gw, token, [...SPOOFED_IDENTITY, ...SPOOFED_IDENTITY]);
    assert.equal(res.status, 200);
    const seen = onlyReceived(gw);
    assertIdentity(seen, jti);
    assert.doesNotMatch(JSON.stringify(seen.rawHeaders), /evil|admin|fake/);
  });

  test('Connection: x-client-id, x-token-scope, x-token-jti cannot drop the identity headers', async (t) => {
    const { gw, token, jti } = await gatewayAndToken(t);
    const res = await get(gw, token, [
      'Connection: close, x-client-id, x-token-scope, x-token-jti, X_Client_Id',
      'X-Client-Id: evil',
    ]);
    assert.equal(res.status, 200);
    assertIdentity(onlyReceived(gw), jti);
  });

  test('a spoofed identity without a token is refused (401) and nothing is forwarded', async (t) => {
    const { gw } = await gatewayAndToken(t);
    const res = await get(gw, null, ['X-Client-Id: acme', 'X-Token-Scope: orders:read']);
    assert.equal(res.status, 401);
    assert.equal(gw.upstream.received.length, 0);
  });

  test('a custom identityHeaders mapping is enforced, and the default names stay reserved', async (t) => {
    const { gw, token } = await gatewayAndToken(t, () => ({
      identityHeaders: { sub: 'X-Partner', client_id: 'X-Partner-Client' },
    }));
    const res = await get(gw, token, [
      'X-Partner: evil',
      'x_partner: evil',
      'X_Partner_Client: evil',
      'x-partner-client: evil',
      'X-Client-Id: from-client',
      'X-Token-Scope: from-client',
      'X_Token_Jti: from-client',
    ]);
    assert.equal(res.status, 200);
    const seen = onlyReceived(gw);
    assert.deepEqual(valuesOf(seen, 'x-partner'), ['acme']);
    assert.deepEqual(valuesOf(seen, 'x-partner-client'), ['acme']);
    // Not configured, so not set, but still reserved: never the client's values.
    assert.deepEqual(valuesOf(seen, 'x-client-id'), []);
    assert.deepEqual(valuesOf(seen, 'x-token-scope'), []);
    assert.deepEqual(valuesOf(seen, 'x-token-jti'), []);
    assert.deepEqual(valuesOf(seen, 'x_token_jti'), []);
  });
});

const SPOOFED_FORWARDING = [
  'X-Forwarded-For: 6.6.6.6',
  'X-Forwarded-Host: evil.example',
  'X-Forwarded-Proto: https',
  'X-Forwarded-Port: 443',
  'Forwarded: for=6.6.6.6;proto=https',
  'X-Real-IP: 6.6.6.6',
  'X_Forwarded_For: 7.7.7.7',
  'X-Forwarded-Prefix: /admin',
  'X-Forwarded-Scheme: https',
  'X-Forwarded-Ssl: on',
  'X_Forwarded_Server: evil',
  'X-Original-URL: /admin/delete',
  'X-Rewrite-URL: /admin',
];

describe('X-Forwarded-* from the client', () => {
  test('are replaced from the connection by default (trustForwardedHeaders false)', async (t) => {
    const { gw, token } = await gatewayAndToken(t);
    assert.equal(gw.config.server.trustForwardedHeaders, false);
    assert.equal((await get(gw, token, SPOOFED_FORWARDING)).status, 200);
    const seen = onlyReceived(gw);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-for'), ['127.0.0.1']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-proto'), ['http']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-host'), ['gateway.test']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-port'), []);
    assert.deepEqual(valuesOf(seen, 'forwarded'), []);
    assert.deepEqual(valuesOf(seen, 'x-real-ip'), []);
    // Fields frameworks honour to rebuild a URL or override the path: never the client's.
    for (const name of [
      'x-forwarded-prefix',
      'x-forwarded-scheme',
      'x-forwarded-ssl',
      'x_forwarded_server',
      'x-original-url',
      'x-rewrite-url',
    ]) {
      assert.deepEqual(valuesOf(seen, name), [], name);
    }
  });

  test('are kept and appended to when server.trustForwardedHeaders is true', async (t) => {
    const { gw, token } = await gatewayAndToken(t, () => ({
      server: { host: '127.0.0.1', port: 0, trustForwardedHeaders: true },
    }));
    assert.equal((await get(gw, token, SPOOFED_FORWARDING)).status, 200);
    const seen = onlyReceived(gw);
    // The `_` spelling is never trusted: a CGI-style upstream would merge it in.
    assert.deepEqual(valuesOf(seen, 'x-forwarded-for'), ['6.6.6.6, 127.0.0.1']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-proto'), ['https']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-host'), ['evil.example']);
    assert.deepEqual(valuesOf(seen, 'forwarded'), ['for=6.6.6.6;proto=https']);
  });
});

/** Request hop-by-hop lines that must not cross the gateway. */
const HOP_BY_HOP_REQUEST: [string, string][] = [
  ['keep-alive', 'Keep-Alive: timeout=99'],
  ['te', 'TE: trailers'],
  ['trailer', 'Trailer: X-Checksum'],
  ['proxy-authorization', 'Proxy-Authorization: Basic cHJveHk6c2VjcmV0'],
  ['proxy-connection', 'Proxy-Connection: keep-alive'],
  ['upgrade', 'Upgrade: h2c'],
  ['x-hop-secret', 'X-Hop-Secret: 1'],
];

describe('hop-by-hop headers', () => {
  test('request hop-by-hop fields and fields named in Connection never reach the upstream', async (t) => {
    const { gw, token } = await gatewayAndToken(t);
    const lines = [
      ...HOP_BY_HOP_REQUEST.map(([, line]) => line),
      'Connection: close, X-Hop-Secret',
    ];
    const res = await get(gw, token, lines);
    assert.equal(res.status, 200);
    const seen = onlyReceived(gw);
    for (const [name] of HOP_BY_HOP_REQUEST) assert.deepEqual(valuesOf(seen, name), [], name);
  });

  test('upstream response hop-by-hop fields never reach the client', async (t) => {
    const upstream = await rawUpstream(t, [
      'HTTP/1.1 200 OK',
      'Content-Type: text/plain',
      'Content-Length: 2',
      'Connection: keep-alive, X-Upstream-Hop',
      'X-Upstream-Hop: internal',
      'Keep-Alive: timeout=99',
      'Proxy-Authenticate: Basic realm="inner"',
      'Proxy-Connection: keep-alive',
      'Trailer: X-Checksum',
      'X-Request-Id: chosen-by-upstream',
      'X-End-To-End: kept',
    ]);
    const gw = await startGateway(t, { settings: () => ({ upstream: { default: { upstream } } }) });
    const token = await gw.token();
    const res = await get(gw, token, ['X-Request-Id: req-1']);
    assert.equal(res.status, 200);
    assert.equal(res.body, 'ok');
    for (const name of [
      'x-upstream-hop',
      'keep-alive',
      'proxy-authenticate',
      'proxy-connection',
      'trailer',
    ]) {
      assert.equal(headerOf(res, name), undefined, name);
    }
    assert.equal(headerOf(res, 'connection'), 'close');
    assert.equal(headerOf(res, 'x-end-to-end'), 'kept');
    assert.equal(headerOf(res, 'x-request-id'), 'req-1');
  });
});

describe('Authorization forwarding', () => {
  test('is forwarded unchanged by default', async (t) => {
    const { gw, token } = await gatewayAndToken(t);
    await get(gw, token, []);
    assert.deepEqual(valuesOf(onlyReceived(gw), 'authorization'), [`Bearer ${token}`]);
  });

  test('forwardAuthorization: false strips it (and the identity headers still arrive)', async (t) => {
    const { gw, token, jti } = await gatewayAndToken(t, () => ({ forwardAuthorization: false }));
    const res = await get(gw, token, ['X_Authorization: Bearer smuggled']);
    assert.equal(res.status, 200);
    const seen = onlyReceived(gw);
    assert.deepEqual(valuesOf(seen, 'authorization'), []);
    assert.deepEqual(valuesOf(seen, 'x-authorization'), ['Bearer smuggled']);
    assertIdentity(seen, jti);
  });
});

describe('X-Request-Id', () => {
  /** [name, value]: short and plain, kept. */
  const kept: [string, string][] = [
    ['a uuid', '0f8fad5b-d9cb-469f-a165-70867728950e'],
    ['letters, digits and ._:-', 'req-42.a:B'],
    ['exactly 128 characters', 'a'.repeat(128)],
  ];
  for (const [name, value] of kept) {
    test(`${name} is kept: echoed on the response and sent upstream`, async (t) => {
      const { gw, token } = await gatewayAndToken(t);
      const res = await get(gw, token, [`X-Request-Id: ${value}`, 'X_Request_Id: smuggled']);
      assert.equal(res.status, 200);
      assert.equal(headerOf(res, 'x-request-id'), value);
      assert.deepEqual(valuesOf(onlyReceived(gw), 'x-request-id'), [value]);
    });
  }

  /** [name, header lines]: replaced by a generated UUID. */
  const replaced: [string, string[]][] = [
    ['129 characters', [`X-Request-Id: ${'a'.repeat(129)}`]],
    ['a value with spaces', ['X-Request-Id: has spaces']],
    ['a value with a slash', ['X-Request-Id: a/b']],
    ['a value with a quote', ['X-Request-Id: a"b']],
    ['an empty value', ['X-Request-Id: ']],
    ['two X-Request-Id headers', ['X-Request-Id: one', 'X-Request-Id: two']],
    ['a non-ASCII value', ['X-Request-Id: caf\u00e9']],
  ];
  for (const [name, lines] of replaced) {
    test(`${name} is replaced by a generated UUID, the same on the response and upstream`, async (t) => {
      const { gw, token } = await gatewayAndToken(t);
      const res = await get(gw, token, lines);
      assert.equal(res.status, 200);
      const id = headerOf(res, 'x-request-id') as string;
      assert.match(id, UUID);
      assert.deepEqual(valuesOf(onlyReceived(gw), 'x-request-id'), [id]);
    });
  }

  test('a refusal carries the kept request id in X-Request-Id and instancia', async (t) => {
    const { gw } = await gatewayAndToken(t);
    const res = await get(gw, null, ['X-Request-Id: trace-7']);
    assert.equal(res.status, 401);
    assert.equal(headerOf(res, 'x-request-id'), 'trace-7');
    assert.equal((JSON.parse(res.body) as { instancia: string }).instancia, '/v1/orders/1#trace-7');
  });
});

/**
 * An upstream that answers every request with exactly the given head (and body `ok`),
 * for response fields Node's own server would not let a handler write.
 */
async function rawUpstream(t: TestContext, head: string[]): Promise<string> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    let buffered = '';
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      for (let guard = 0; guard < 16; guard++) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end === -1) break;
        buffered = buffered.slice(end + 4);
        socket.write(`${head.join('\r\n')}\r\n\r\nok`);
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}
