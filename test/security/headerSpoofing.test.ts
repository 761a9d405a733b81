/**
 * Header spoofing through a real gateway: identity headers, `X-Forwarded-*`, hop-by-hop
 * fields, `Authorization` forwarding and `X-Request-Id`. Requests go over raw TCP so that
 * duplicates, odd casing and `_` spellings reach the gateway exactly as written.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
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
  test('are replaced from the connection by default (no trusted proxies)', async (t) => {
    const { gw, token } = await gatewayAndToken(t);
    assert.deepEqual(gw.config.server.trustedProxies, []);
    assert.equal((await get(gw, token, SPOOFED_FORWARDING)).status, 200);
    const seen = onlyReceived(gw);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-for'), ['127.0.0.1']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-proto'), ['http']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-host'), ['gateway.test']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-port'), []);
    assert.deepEqual(valuesOf(seen, 'forwarded'), ['for=127.0.0.1;host=gateway.test;proto=http']);
    assert.deepEqual(valuesOf(seen, 'x-real-ip'), ['127.0.0.1']);
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
});

/** Caller-written address, host, path and method fields, one per family member. */
const CALLER_HEADERS: readonly string[] = [
  'True-Client-IP',
  'X-Client-IP',
  'Client-IP',
  'X-Cluster-Client-IP',
  'CF-Connecting-IP',
  'Fastly-Client-IP',
  'X-Originating-IP',
  'X-Remote-IP',
  'X-Remote-Addr',
  'X-Original-Forwarded-For',
  'X-Envoy-External-Address',
  'X-Envoy-Original-Path',
  'X-Host',
  'X-Original-Host',
  'X-HTTP-Host-Override',
  'X-Original-URI',
  'X-HTTP-Method-Override',
  'X-HTTP-Method',
  'X-Method-Override',
];

/** `name` as written, lowercased, uppercased and with `_` for `-` in two cases. */
function spellings(name: string): string[] {
  const under = name.replaceAll('-', '_');
  return [name, name.toLowerCase(), name.toUpperCase(), under, under.toLowerCase()];
}

/** One line per spelling of each name, the value naming the spelling. */
function callerLines(names: readonly string[]): string[] {
  return names.flatMap((name) => spellings(name).map((s) => `${s}: spoofed-${s}`));
}

describe('caller-written address, host, path and method fields', () => {
  for (const name of CALLER_HEADERS) {
    test(`${name}, in every case and _ spelling, never reaches the upstream`, async (t) => {
      const { gw, token } = await gatewayAndToken(t);
      const res = await get(gw, token, callerLines([name]));
      assert.equal(res.status, 200);
      const seen = onlyReceived(gw);
      assert.deepEqual(valuesOf(seen, name.toLowerCase()), []);
      assert.doesNotMatch(JSON.stringify(seen.rawHeaders), /spoofed/);
    });
  }

  test('a method override cannot turn a POST into TRACE or PROPFIND at the upstream', async (t) => {
    const { gw, token } = await gatewayAndToken(t);
    const head = [
      'POST /v1/orders/1 HTTP/1.1',
      'Host: gateway.test',
      `Authorization: Bearer ${token}`,
      'X-HTTP-Method-Override: TRACE',
      'X-HTTP-Method: PROPFIND',
      'X_Method_Override: DELETE',
      'Content-Length: 2',
      'Connection: close',
    ];
    const res = onlyResponse(await rawRequest(gw.url, `${head.join('\r\n')}\r\n\r\n{}`));
    assert.equal(res.status, 200);
    const seen = onlyReceived(gw);
    assert.equal(seen.method, 'POST');
    assert.doesNotMatch(JSON.stringify(seen.rawHeaders), /TRACE|PROPFIND|DELETE/);
  });

  test('forwardCallerHeaders lets a named one through in its - spelling, and only that one', async (t) => {
    const { gw, token } = await gatewayAndToken(t, () => ({
      forwardCallerHeaders: ['X-Original-Host', 'cf-connecting-ip'],
    }));
    const res = await get(gw, token, [
      'X-Original-Host: shop.example',
      'X_Original_Host: smuggled',
      'CF-Connecting-IP: 192.0.2.44',
      'X-Host: spoofed',
      'X-HTTP-Method-Override: TRACE',
    ]);
    assert.equal(res.status, 200);
    const seen = onlyReceived(gw);
    assert.deepEqual(seen.headers['x-original-host'], 'shop.example');
    assert.deepEqual(seen.headers['cf-connecting-ip'], '192.0.2.44');
    assert.doesNotMatch(JSON.stringify(seen.rawHeaders), /smuggled|spoofed|TRACE/);
  });

  test('none of them reaches the upstream of a WebSocket handshake', async (t) => {
    const upstream = await upgradeRecorder(t);
    // Every family in five spellings in one handshake: more lines than the default limit.
    const { gw, token } = await gatewayAndToken(t, () => ({
      server: { maxHeaderLines: 200 },
      upstream: { default: { upstream: upstream.url } },
    }));
    const head = [
      'GET /v1/chat HTTP/1.1',
      'Host: gateway.test',
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      `Authorization: Bearer ${token}`,
      ...callerLines(CALLER_HEADERS),
      'X-Forwarded-For: 6.6.6.6',
      'X-Real-IP: 6.6.6.6',
    ];
    const res = await rawRequest(gw.url, `${head.join('\r\n')}\r\n\r\n`);
    assert.match(res, /^HTTP\/1\.1 101 /);
    const seen = upstream.received[0];
    assert.ok(seen, 'the handshake reached the upstream');
    assert.doesNotMatch(JSON.stringify(seen), /spoofed|6\.6\.6\.6/);
    assert.deepEqual(headerValues(seen, 'x-forwarded-for'), ['127.0.0.1']);
    assert.deepEqual(headerValues(seen, 'x-real-ip'), ['127.0.0.1']);
  });
});

describe('server.trustedProxies', () => {
  /** [X-Forwarded-For sent, trustedProxies, X-Forwarded-For, X-Real-IP and Forwarded's for= upstream]. */
  const cases: [string, string[], string, string, string][] = [
    ['203.0.113.9', ['127.0.0.1'], '203.0.113.9, 127.0.0.1', '203.0.113.9', 'for=203.0.113.9'],
    [
      '6.6.6.6, 203.0.113.9',
      ['loopback'],
      '203.0.113.9, 127.0.0.1',
      '203.0.113.9',
      'for=203.0.113.9',
    ],
    [
      '6.6.6.6, 203.0.113.9, 10.1.2.3',
      ['127.0.0.1', '10.0.0.0/8'],
      '203.0.113.9, 10.1.2.3, 127.0.0.1',
      '203.0.113.9',
      'for=203.0.113.9',
    ],
    ['10.0.0.7', ['loopback', 'uniquelocal'], '10.0.0.7, 127.0.0.1', '10.0.0.7', 'for=10.0.0.7'],
    [
      '6.6.6.6, 2001:DB8::1',
      ['127.0.0.0/8'],
      '2001:DB8::1, 127.0.0.1',
      '2001:DB8::1',
      'for="[2001:DB8::1]"',
    ],
    ['not-an-ip', ['loopback'], '127.0.0.1', '127.0.0.1', 'for=127.0.0.1'],
    ['203.0.113.9:4711', ['loopback'], '127.0.0.1', '127.0.0.1', 'for=127.0.0.1'],
    ['[2001:db8::1]', ['loopback'], '127.0.0.1', '127.0.0.1', 'for=127.0.0.1'],
    [
      '6.6.6.6, ,, 203.0.113.9',
      ['loopback'],
      '203.0.113.9, 127.0.0.1',
      '203.0.113.9',
      'for=203.0.113.9',
    ],
    ['203.0.113.9', ['10.0.0.0/8'], '127.0.0.1', '127.0.0.1', 'for=127.0.0.1'],
    ['203.0.113.9', [], '127.0.0.1', '127.0.0.1', 'for=127.0.0.1'],
  ];
  for (const [xff, trusted, upstreamXff, realIp, forwardedFor] of cases) {
    test(`X-Forwarded-For "${xff}" from 127.0.0.1 trusting ${JSON.stringify(trusted)} reaches the upstream as "${upstreamXff}"`, async (t) => {
      const { gw, token } = await gatewayAndToken(t, () => ({
        server: { host: '127.0.0.1', port: 0, trustedProxies: trusted },
      }));
      const res = await get(gw, token, [`X-Forwarded-For: ${xff}`, 'X-Real-IP: 6.6.6.6']);
      assert.equal(res.status, 200);
      const seen = onlyReceived(gw);
      assert.deepEqual(valuesOf(seen, 'x-forwarded-for'), [upstreamXff]);
      assert.deepEqual(valuesOf(seen, 'x-real-ip'), [realIp]);
      assert.deepEqual(valuesOf(seen, 'forwarded'), [
        `${forwardedFor};host=gateway.test;proto=http`,
      ]);
    });
  }

  test('a trusted peer keeps its X-Forwarded-Proto/-Host; the gateway writes Forwarded and X-Real-IP', async (t) => {
    const { gw, token } = await gatewayAndToken(t, () => ({
      server: { host: '127.0.0.1', port: 0, trustedProxies: ['loopback'] },
    }));
    assert.equal((await get(gw, token, SPOOFED_FORWARDING)).status, 200);
    const seen = onlyReceived(gw);
    // The `_` spelling is never trusted: a CGI-style upstream would merge it in.
    assert.deepEqual(valuesOf(seen, 'x-forwarded-for'), ['6.6.6.6, 127.0.0.1']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-proto'), ['https']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-host'), ['evil.example']);
    assert.deepEqual(valuesOf(seen, 'x-real-ip'), ['6.6.6.6']);
    assert.deepEqual(valuesOf(seen, 'forwarded'), ['for=6.6.6.6;host=evil.example;proto=https']);
  });

  test('a peer outside the list is a client: its forwarding fields are replaced', async (t) => {
    const { gw, token } = await gatewayAndToken(t, () => ({
      server: { host: '127.0.0.1', port: 0, trustedProxies: ['10.0.0.0/8', '::1'] },
    }));
    assert.equal((await get(gw, token, SPOOFED_FORWARDING)).status, 200);
    const seen = onlyReceived(gw);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-for'), ['127.0.0.1']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-proto'), ['http']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-host'), ['gateway.test']);
    assert.deepEqual(valuesOf(seen, 'x-forwarded-port'), []);
  });
});

/** [name, raw rawHeaders] of each upgrade an upstream received; it answers 101 and closes. */
interface UpgradeRecorder {
  url: string;
  received: string[][];
}

async function upgradeRecorder(t: TestContext): Promise<UpgradeRecorder> {
  const recorder: UpgradeRecorder = { url: '', received: [] };
  const server = createHttpServer((_req, res) => res.end('plain'));
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    recorder.received.push(req.rawHeaders);
    socket.on('error', () => {});
    socket.end(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n',
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  recorder.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return recorder;
}

/** Values of `name` in a raw header list, reading `_` as `-` and ignoring case. */
function headerValues(rawHeaders: string[], name: string): string[] {
  return valuesOf({ rawHeaders } as ReceivedRequest, name);
}

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
