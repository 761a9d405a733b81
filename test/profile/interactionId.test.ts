/**
 * `x-fapi-interaction-id` under profile fapi-br (FAPI 1.0 Part 1 §6.2.1 items 11–13),
 * on a real mutual-TLS gateway with a real upstream: generated when absent, a client's
 * UUID kept, echoed on every answer (refusals too), forwarded upstream, in the access
 * line; anything but a UUID is refused with 400 naming the header.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, type TestContext, test } from 'node:test';
import { connect } from 'node:tls';
import { CLIENT_ID, CLIENT_SECRET, type ClientSpec, TOKEN_PATH } from '../helpers/fixture.js';
import { startTlsGateway, type TlsGateway } from '../helpers/tlsGateway.js';
import { accessLineOf } from '../helpers/wait.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const THEIRS = '9B0C2F4E-1D3A-4C5B-8E6F-7A8B9C0D1E2F';
const HEADER = 'x-fapi-interaction-id';

const FAPI_CLIENT: ClientSpec = {
  id: CLIENT_ID,
  secret: CLIENT_SECRET,
  scopes: ['orders:read'],
  extra: {
    authMethods: ['private_key_jwt'],
    jwksFile: 'partner.jwks.json',
    assertionAlg: 'PS256',
  },
};

function gateway(t: TestContext, profile = 'fapi-br'): Promise<TlsGateway> {
  return startTlsGateway(t, {
    algorithm: 'PS256',
    clientCertificates: 'request',
    tls: { policy: 'fapi', minVersion: 'TLSv1.3' },
    clients: [FAPI_CLIENT],
    settings: () => ({ profile }),
  });
}

describe('x-fapi-interaction-id under profile fapi-br', () => {
  test('absent: one is generated, echoed and forwarded upstream', async (t) => {
    const gw = await gateway(t);
    const token = await gw.tlsToken();
    const res = await gw.fetch('/v1/orders/1', { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const id = res.headers.get(HEADER) as string;
    assert.match(id, UUID);
    const received = gw.upstream.received.at(-1);
    assert.equal(received?.headers[HEADER], id);
    const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') as string);
    assert.equal(line['portaria.fapi.interaction_id'], id);
  });

  test("a client's UUID is kept: echoed as sent, forwarded once", async (t) => {
    const gw = await gateway(t);
    const token = await gw.tlsToken();
    const res = await gw.fetch('/v1/orders/1', {
      headers: { authorization: `Bearer ${token}`, [HEADER]: THEIRS },
    });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    assert.equal(res.headers.get(HEADER), THEIRS);
    const raw = gw.upstream.received.at(-1)?.rawHeaders ?? [];
    const sent = raw.filter((_, i) => i % 2 === 1 && raw[i - 1]?.toLowerCase() === HEADER);
    assert.deepEqual(sent, [THEIRS]);
  });

  test('echoed on a 401 refusal, the token answer, a served document and an OAuth endpoint', async (t) => {
    const gw = await gateway(t);
    const refused = await gw.fetch('/v1/orders/1', { headers: { [HEADER]: THEIRS } });
    assert.equal(refused.status, 401);
    await refused.arrayBuffer();
    assert.equal(refused.headers.get(HEADER), THEIRS);
    const issued = await gw.fetch(TOKEN_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [HEADER]: THEIRS },
      body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
    });
    assert.equal(issued.status, 200);
    await issued.arrayBuffer();
    assert.equal(issued.headers.get(HEADER), THEIRS);
    const jwks = await gw.fetch('/.well-known/jwks.json', { headers: { [HEADER]: THEIRS } });
    assert.equal(jwks.status, 200);
    await jwks.arrayBuffer();
    assert.equal(jwks.headers.get(HEADER), THEIRS);
    const oauth = await gw.fetch('/oauth2/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', [HEADER]: THEIRS },
      body: 'grant_type=client_credentials',
    });
    assert.equal(oauth.status, 401);
    await oauth.arrayBuffer();
    assert.equal(oauth.headers.get(HEADER), THEIRS);
  });

  for (const [name, value] of [
    ['not a UUID', 'abc'],
    ['a UUID with braces', `{${THEIRS}}`],
    ['two values', `${THEIRS}, ${THEIRS}`],
  ] as const) {
    test(`${name}: 400 problem details naming the header, with a fresh id, nothing forwarded`, async (t) => {
      const gw = await gateway(t);
      const res = await gw.fetch('/v1/orders/1', { headers: { [HEADER]: value } });
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      const problem = (await res.json()) as Record<string, unknown>;
      assert.match(String(problem.detalhe), /x-fapi-interaction-id/);
      const id = res.headers.get(HEADER) as string;
      assert.match(id, UUID);
      assert.notEqual(id, value);
      assert.equal(gw.upstream.received.length, 0);
      const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') as string);
      assert.equal(line['portaria.reason'], 'interaction-id-malformed');
    });
  }

  test("echoed on a WebSocket upgrade's refusal, written on the raw socket", async (t) => {
    const gw = await gateway(t);
    const { port } = new URL(gw.url);
    const socket = connect({
      host: '127.0.0.1',
      port: Number(port),
      ca: gw.pki.ca.pem,
      cert: gw.pki.client.cert,
      key: gw.pki.client.key,
      servername: 'localhost',
    });
    t.after(() => socket.destroy());
    await once(socket, 'secureConnect');
    socket.end(
      [
        'GET /v1/stream HTTP/1.1',
        `Host: 127.0.0.1:${port}`,
        'Connection: Upgrade',
        'Upgrade: websocket',
        'Sec-WebSocket-Version: 13',
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
        `${HEADER}: ${THEIRS}`,
        '',
        '',
      ].join('\r\n'),
    );
    let answer = '';
    for await (const chunk of socket) answer += String(chunk);
    assert.match(answer, /^HTTP\/1\.1 401 /);
    assert.ok(answer.toLowerCase().includes(`${HEADER}: ${THEIRS.toLowerCase()}`), answer);
  });

  test('without the profile the header is neither read, nor added, nor echoed', async (t) => {
    const gw = await gateway(t, 'none');
    const res = await gw.fetch('/v1/orders/1', { headers: { [HEADER]: 'abc' } });
    assert.equal(res.status, 401);
    await res.arrayBuffer();
    assert.equal(res.headers.get(HEADER), null);
  });
});
