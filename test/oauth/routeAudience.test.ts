/**
 * A route that names an `audience` admits only tokens whose `aud` carries it (RFC 8707 on
 * the resource side): our own tokens and a trusted external issuer's alike; every other
 * route is unchanged.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, type TestContext, test } from 'node:test';
import { type Gateway, problemOf, startGateway } from '../helpers/fixture.js';
import { ecKey, jwksOf, serve, startJwksServer, type TestKey } from '../helpers/jwksServer.js';
import { signWith, signWithGatewayKey, validClaims } from '../helpers/tokens.js';
import { accessLineOf } from '../helpers/wait.js';

const ORDERS_AUDIENCE = 'https://portaria.test/v1/orders';
const PARTNER_ISS = 'https://idp.partner.test';

async function start(t: TestContext): Promise<{ gw: Gateway; partnerKey: TestKey }> {
  const partnerKey = ecKey('partner-1');
  const jwks = await startJwksServer(t, serve(jwksOf(partnerKey)));
  const gw = await startGateway(t, {
    settings: (upstream) => ({
      routes: [
        {
          id: 'orders',
          prefix: '/v1/orders',
          upstream,
          scopes: ['orders:read'],
          audience: ORDERS_AUDIENCE,
        },
        { id: 'reports', prefix: '/v1/reports', upstream, scopes: ['reports:read'] },
      ],
      issuers: [
        {
          id: 'partner',
          issuer: PARTNER_ISS,
          jwksUri: jwks.url,
          audiences: ['partner-api', ORDERS_AUDIENCE],
          algorithms: ['ES256'],
        },
      ],
      reload: { enabled: false },
    }),
  });
  return { gw, partnerKey };
}

function call(gw: Gateway, token: string, path: string): Promise<Response> {
  return fetch(gw.url + path, { headers: { authorization: `Bearer ${token}` } });
}

async function expectAdmitted(gw: Gateway, token: string, path: string): Promise<void> {
  const res = await call(gw, token, path);
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
}

async function expectWrongAudience(gw: Gateway, token: string, path: string): Promise<void> {
  const res = await call(gw, token, path);
  assert.equal(res.status, 401);
  assert.match(
    res.headers.get('www-authenticate') ?? '',
    /^Bearer realm="portaria", error="invalid_token"/,
  );
  const problem = await problemOf(res);
  assert.equal(problem.tipo, 'urn:portaria:problem:token-invalid');
  assert.equal(problem.detalhe, 'The access token is not valid for this resource.');
  const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') as string);
  assert.equal(line['portaria.reason'], 'audience-not-allowed');
}

describe('a route that requires an audience', () => {
  test('admits our own token whose aud carries the route audience', async (t) => {
    const { gw } = await start(t);
    const token = await signWithGatewayKey(
      gw,
      validClaims(gw, { aud: [gw.config.audience, ORDERS_AUDIENCE] }),
    );
    await expectAdmitted(gw, token, '/v1/orders/1');
    assert.equal(gw.upstream.received.length, 1);
  });

  test('refuses with 401 invalid_token a valid token issued for the gateway only', async (t) => {
    const { gw } = await start(t);
    const token = await gw.token();
    await expectWrongAudience(gw, token, '/v1/orders/1');
    // A suffix beside the prefix keeps the rule (the route matched at a ".").
    await expectWrongAudience(gw, token, '/v1/orders.json');
    assert.equal(gw.upstream.received.length, 0, 'nothing forwarded');
  });

  test('is refused before the scopes: a token lacking both gets 401, not 403', async (t) => {
    const { gw } = await start(t);
    const token = await signWithGatewayKey(gw, validClaims(gw, { scope: '' }));
    await expectWrongAudience(gw, token, '/v1/orders/1');
  });

  test('our token issued for the route’s resource only: admitted there, refused elsewhere', async (t) => {
    const { gw } = await start(t);
    const token = await signWithGatewayKey(
      gw,
      validClaims(gw, { aud: ORDERS_AUDIENCE, scope: 'orders:read reports:read' }),
    );
    await expectAdmitted(gw, token, '/v1/orders/1');
    // A route naming no audience wants the gateway's own in our tokens.
    await expectWrongAudience(gw, token, '/v1/reports/1');
    // An audience neither the gateway nor a route uses fails verification itself.
    const elsewhere = await signWithGatewayKey(gw, validClaims(gw, { aud: 'https://else.test' }));
    const res = await call(gw, elsewhere, '/v1/orders/1');
    assert.equal(res.status, 401);
    const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') as string);
    assert.equal(line['portaria.reason'], 'wrong-audience');
  });

  test('a token asked for with resource= at the token endpoint serves that route', async (t) => {
    const gw = await startGateway(t, {
      clients: [
        {
          id: 'acme',
          secret: 'acme-secret-0123456789abcdefghijklmnopqrstu',
          scopes: ['orders:read'],
          extra: { audiences: ['partner-api', ORDERS_AUDIENCE] },
        },
      ],
      settings: (upstream) => ({
        routes: [
          { id: 'orders', prefix: '/v1/orders', upstream, audience: ORDERS_AUDIENCE },
          { id: 'reports', prefix: '/v1/reports', upstream },
        ],
      }),
    });
    const res = await fetch(`${gw.url}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        resource: ORDERS_AUDIENCE,
        client_id: 'acme',
        client_secret: 'acme-secret-0123456789abcdefghijklmnopqrstu',
      }).toString(),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const token = ((await res.json()) as { access_token: string }).access_token;
    await expectAdmitted(gw, token, '/v1/orders/1');
    await expectWrongAudience(gw, token, '/v1/reports/1');
    await expectAdmitted(gw, await gw.token(), '/v1/reports/1');
  });

  test('routes naming no audience admit the token as before', async (t) => {
    const { gw } = await start(t);
    const token = await signWithGatewayKey(
      gw,
      validClaims(gw, { scope: 'reports:read', aud: gw.config.audience }),
    );
    await expectAdmitted(gw, token, '/v1/reports/1');
  });

  test('applies to a trusted external issuer: its aud must carry the route audience', async (t) => {
    const { gw, partnerKey } = await start(t);
    const now = Math.floor(Date.now() / 1000);
    const partnerToken = (aud: unknown) =>
      signWith(
        partnerKey.privateKey,
        'ES256',
        {
          iss: PARTNER_ISS,
          sub: 'partner-app',
          aud,
          iat: now,
          exp: now + 300,
          jti: randomUUID(),
          scope: 'orders:read reports:read',
        },
        { kid: partnerKey.kid },
      );
    await expectAdmitted(gw, await partnerToken(ORDERS_AUDIENCE), '/v1/orders/1');
    await expectWrongAudience(gw, await partnerToken('partner-api'), '/v1/orders/1');
    await expectAdmitted(gw, await partnerToken('partner-api'), '/v1/reports/1');
  });
});
