/**
 * DPoP (RFC 9449) end to end with openid-client v6, a client library written by others:
 * it discovers the gateway from its RFC 8414 metadata, gets a DPoP-bound token at
 * `/oauth2/token` with a key of its own and calls a route through the edge with a fresh
 * proof — and the stolen-token attacks: the token as Bearer, and a thief's own key.
 *
 * The client sees the published `https://portaria.test` only; a loopback TLS terminator
 * (a `fetch`) sends its requests to the gateway with `X-Forwarded-Proto` and
 * `-Host`, which the gateway trusts from loopback: the proofs' `htu` names the public URL
 * (§4.3 item 10), as behind a real terminator.
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { calculateJwkThumbprint, decodeJwt, exportJWK } from 'jose';
import * as client from 'openid-client';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  DEFAULT_CLIENTS,
  type Gateway,
  problemOf,
  startGateway,
} from '../helpers/fixture.js';
import { accessLineOf } from '../helpers/wait.js';

const PUBLIC_ORIGIN = 'https://portaria.test';
const PUBLIC_HOST = 'portaria.test';

/** What a TLS terminator in front of the gateway does: forwards, saying what the client used. */
function tlsTerminator(gw: Gateway): typeof fetch {
  return (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith(`${PUBLIC_ORIGIN}/`)) throw new Error(`unexpected request to ${url}`);
    const headers = new Headers(init?.headers);
    headers.set('x-forwarded-proto', 'https');
    headers.set('x-forwarded-host', PUBLIC_HOST);
    return fetch(gw.url + url.slice(PUBLIC_ORIGIN.length), { ...init, headers });
  };
}

interface Setup {
  gw: Gateway;
  config: client.Configuration;
  send: typeof fetch;
}

async function setup(t: TestContext): Promise<Setup> {
  // acme may introspect, to read the binding as a resource server would (RFC 9449 §6.2).
  const clients = DEFAULT_CLIENTS.map((c) =>
    c.id === CLIENT_ID ? { ...c, extra: { permissions: ['introspect'] } } : c,
  );
  const gw = await startGateway(t, {
    clients,
    settings: (upstream) => ({
      dpop: { enabled: true },
      server: { trustedProxies: ['loopback'] },
      upstream: { default: null },
      routes: [{ id: 'orders', prefix: '/v1/orders', upstream, scopes: ['orders:read'] }],
    }),
  });
  const send = tlsTerminator(gw);
  const config = await client.discovery(
    new URL(PUBLIC_ORIGIN),
    CLIENT_ID,
    undefined,
    client.ClientSecretPost(CLIENT_SECRET),
    { algorithm: 'oauth2', [client.customFetch]: send },
  );
  return { gw, config, send };
}

/** The library's call; a refusal with a challenge is thrown by it, holding the answer. */
async function resource(
  s: Setup,
  token: string,
  dpop: client.DPoPHandle,
  path: string,
): Promise<Response> {
  try {
    return await client.fetchProtectedResource(
      s.config,
      token,
      new URL(PUBLIC_ORIGIN + path),
      'GET',
      undefined,
      undefined,
      { DPoP: dpop },
    );
  } catch (error) {
    if (error instanceof client.WWWAuthenticateChallengeError) return error.response;
    throw error;
  }
}

describe('DPoP with openid-client', () => {
  test('discovers the gateway, gets a DPoP-bound token and calls a route with it through the edge', async (t) => {
    const s = await setup(t);
    assert.equal(s.config.serverMetadata().token_endpoint, `${PUBLIC_ORIGIN}/oauth2/token`);
    const keys = await client.randomDPoPKeyPair();
    const dpop = client.getDPoPHandle(s.config, keys);
    const tokens = await client.clientCredentialsGrant(
      s.config,
      { scope: 'orders:read' },
      { DPoP: dpop },
    );
    assert.equal(tokens.token_type, 'dpop');
    const jkt = await calculateJwkThumbprint(await exportJWK(keys.publicKey), 'sha256');
    assert.deepEqual(decodeJwt(tokens.access_token).cnf, { jkt });
    const described = await client.tokenIntrospection(s.config, tokens.access_token);
    assert.equal(described.active, true);
    assert.deepEqual(described.cnf, { jkt });
    assert.equal(
      described.token_type,
      'DPoP',
      'introspection names the type the token response gave',
    );

    // Two calls: each with its own proof (a new jti, the token's ath).
    for (const path of ['/v1/orders/7', '/v1/orders/8']) {
      const res = await resource(s, tokens.access_token, dpop, path);
      assert.equal(res.status, 200, path);
      assert.deepEqual(await res.json(), { path, method: 'GET' });
    }
    const received = s.gw.upstream.received;
    assert.deepEqual(
      received.map((r) => r.url),
      ['/v1/orders/7', '/v1/orders/8'],
    );
    assert.equal(received[0]?.headers['x-client-id'], CLIENT_ID);
    assert.equal(received[0]?.headers['x-token-scope'], 'orders:read');
  });

  test('the stolen token is refused as Bearer and with a thief’s own DPoP key', async (t) => {
    const s = await setup(t);
    const dpop = client.getDPoPHandle(s.config, await client.randomDPoPKeyPair());
    const { access_token: token } = await client.clientCredentialsGrant(
      s.config,
      { scope: 'orders:read' },
      { DPoP: dpop },
    );

    // As Bearer, by plain fetch: the binding may not be dropped (RFC 9449 §7.2).
    const bearer = await s.send(`${PUBLIC_ORIGIN}/v1/orders/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(bearer.status, 401);
    assert.match(
      bearer.headers.get('www-authenticate') ?? '',
      /^Bearer realm="portaria", error="invalid_token"/,
    );
    assert.equal((await problemOf(bearer)).tipo, 'urn:portaria:problem:token-invalid');
    const asBearer = await accessLineOf(s.gw.logs, bearer.headers.get('x-request-id') as string);
    assert.equal(asBearer['portaria.reason'], 'dpop-as-bearer');

    // The thief uses the library as the client does, with a key of its own.
    const thief = client.getDPoPHandle(s.config, await client.randomDPoPKeyPair());
    const stolen = await client
      .fetchProtectedResource(
        s.config,
        token,
        new URL(`${PUBLIC_ORIGIN}/v1/orders/1`),
        'GET',
        undefined,
        undefined,
        { DPoP: thief },
      )
      .then(
        () => assert.fail('the thief’s call passed'),
        (error: unknown) => error,
      );
    assert.ok(stolen instanceof client.WWWAuthenticateChallengeError, String(stolen));
    assert.equal(stolen.status, 401);
    assert.deepEqual(
      stolen.cause.map((c) => [c.scheme, c.parameters.error]),
      [['dpop', 'invalid_dpop_proof']],
    );
    assert.equal(
      (await problemOf(stolen.response)).tipo,
      'urn:portaria:problem:dpop-proof-invalid',
    );
    const line = await accessLineOf(
      s.gw.logs,
      stolen.response.headers.get('x-request-id') as string,
    );
    assert.equal(line['portaria.reason'], 'dpop-key-mismatch');
    assert.equal(s.gw.upstream.received.length, 0);

    // The holder of the key still gets through.
    const res = await resource(s, token, dpop, '/v1/orders/1');
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    assert.equal(s.gw.upstream.received.length, 1);
  });
});
