/**
 * RFC 7662 token introspection for resource servers: only clients holding `introspect`;
 * an active token's claims from the edge's own verification (trusted external issuers
 * included; our own tokens whatever their audience); `{"active":false}` and nothing else
 * for every token the edge would refuse for another reason.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, type TestContext, test } from 'node:test';
import { decodeJwt } from 'jose';
import { ManualClock } from '../../src/lib/clock.js';
import { type ClientSpec, type Gateway, startGateway } from '../helpers/fixture.js';
import { ecKey, jwksOf, serve, startJwksServer, type TestKey } from '../helpers/jwksServer.js';
import { signWith, signWithGatewayKey, validClaims } from '../helpers/tokens.js';
import {
  basic,
  CLIENTS,
  errorOf,
  INTROSPECT_PATH,
  postForm,
  RESOURCE_SERVER,
  REVOKE_PATH,
  statusThroughRoute,
} from './formRequests.js';

const PARTNER_ISS = 'https://idp.partner.test';
const TOKEN_ENDPOINT_PATH = '/oauth2/token';
const RESOURCE = 'https://api.partner.test/orders';
/** A client that may ask for a resource (RFC 8707) no route names. */
const RESOURCE_CLIENT = {
  id: 'resourceful',
  secret: 'resourceful-secret-0123456789abcdefghijk',
  scopes: ['orders:read'],
  extra: { audiences: ['partner-api', RESOURCE] },
} satisfies ClientSpec;
const asResourceServer = () => basic(RESOURCE_SERVER.id, RESOURCE_SERVER.secret);

async function start(
  t: TestContext,
  extra: Record<string, unknown> = {},
  clock?: ManualClock,
): Promise<{ gw: Gateway; partner: TestKey }> {
  const partner = ecKey('p1');
  const jwks = await startJwksServer(t, serve(jwksOf(partner)));
  const gw = await startGateway(t, {
    clients: [...CLIENTS, RESOURCE_CLIENT],
    ...(clock === undefined ? {} : { clock }),
    settings: () => ({
      issuers: [
        {
          id: 'partner',
          issuer: PARTNER_ISS,
          jwksUri: jwks.url,
          audiences: ['partner-api'],
          algorithms: ['ES256'],
        },
      ],
      ...extra,
    }),
  });
  return { gw, partner };
}

async function introspect(
  gw: Gateway,
  token: string,
  authorization = asResourceServer(),
): Promise<Record<string, unknown>> {
  const res = await postForm(gw, INTROSPECT_PATH, { token }, authorization);
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.equal(res.headers.get('content-type'), 'application/json');
  return (await res.json()) as Record<string, unknown>;
}

describe('token introspection (RFC 7662)', () => {
  test('an active token of ours: the claims RFC 7662 names, from the token itself', async (t) => {
    const { gw } = await start(t);
    const token = await gw.token();
    const claims = decodeJwt(token);
    assert.deepEqual(await introspect(gw, token), {
      active: true,
      scope: 'orders:read orders:write',
      client_id: 'acme',
      sub: 'acme',
      aud: claims.aud,
      iss: 'https://portaria.test',
      exp: claims.exp,
      iat: claims.iat,
      nbf: claims.nbf,
      jti: claims.jti,
      token_type: 'Bearer',
    });
  });

  test('a trusted external issuer’s token is described as the edge sees it', async (t) => {
    const { gw, partner } = await start(t);
    const now = Math.floor(Date.now() / 1000);
    const jti = randomUUID();
    const token = await signWith(
      partner.privateKey,
      'ES256',
      {
        iss: PARTNER_ISS,
        sub: 'partner-app',
        aud: ['partner-api'],
        iat: now,
        exp: now + 300,
        jti,
        scope: 'orders:read',
      },
      { kid: partner.kid },
    );
    assert.deepEqual(await introspect(gw, token), {
      active: true,
      scope: 'orders:read',
      client_id: 'partner-app',
      sub: 'partner-app',
      aud: ['partner-api'],
      iss: PARTNER_ISS,
      exp: now + 300,
      iat: now,
      jti,
      token_type: 'Bearer',
    });
  });

  test('revoked, expired, foreign, wrong-audience and malformed tokens: active false only', async (t) => {
    const clock = new ManualClock(Date.now());
    const { gw, partner } = await start(t, {}, clock);
    const revoked = await gw.token();
    const revocation = await postForm(gw, REVOKE_PATH, { token: revoked }, basic());
    assert.equal(revocation.status, 200, await revocation.text());
    const soonExpired = await gw.token();
    const foreign = await signWith(
      ecKey('x').privateKey,
      'ES256',
      validClaims(gw, { iss: 'https://else.test' }),
      {
        kid: 'x',
      },
    );
    const now = Math.floor(clock.now() / 1000);
    const otherAudience = await signWith(
      partner.privateKey,
      'ES256',
      { iss: PARTNER_ISS, sub: 'p', aud: 'someone-else', iat: now, exp: now + 300, jti: 'j' },
      { kid: partner.kid },
    );
    const forged = `${revoked.slice(0, revoked.lastIndexOf('.'))}.${'A'.repeat(86)}`;
    for (const token of [revoked, foreign, otherAudience, forged, 'garbage', 'a.b.c']) {
      assert.deepEqual(await introspect(gw, token), { active: false }, token.slice(0, 20));
    }
    assert.equal((await introspect(gw, soonExpired)).active, true);
    clock.advance(3600_000 + 60_000);
    assert.deepEqual(await introspect(gw, soonExpired), { active: false });
  });

  test('a token of ours for an RFC 8707 resource no route names: active, then revoked by its client', async (t) => {
    const { gw } = await start(t);
    const res = await postForm(
      gw,
      TOKEN_ENDPOINT_PATH,
      { grant_type: 'client_credentials', resource: RESOURCE },
      basic(RESOURCE_CLIENT.id, RESOURCE_CLIENT.secret),
    );
    assert.equal(res.status, 200, await res.clone().text());
    const token = ((await res.json()) as { access_token: string }).access_token;
    const claims = decodeJwt(token);
    assert.equal(claims.aud, RESOURCE);
    const described = await introspect(gw, token);
    assert.equal(described.active, true);
    assert.equal(described.aud, RESOURCE);
    assert.equal(described.client_id, RESOURCE_CLIENT.id);
    const revocation = await postForm(
      gw,
      REVOKE_PATH,
      { token },
      basic(RESOURCE_CLIENT.id, RESOURCE_CLIENT.secret),
    );
    assert.equal(revocation.status, 200);
    await revocation.arrayBuffer();
    assert.deepEqual(await introspect(gw, token), { active: false });
    assert.ok(gw.logs.some((line) => line.includes('token revoked by its client')));
  });

  test('our own token with any audience is ours: active; the edge still refuses it', async (t) => {
    const { gw } = await start(t);
    const token = await signWithGatewayKey(gw, validClaims(gw, { aud: 'someone-else' }));
    assert.equal((await introspect(gw, token)).aud, 'someone-else');
    assert.equal(await statusThroughRoute(gw, token), 401);
  });

  test('a client without the introspect permission gets 403 unauthorized_client', async (t) => {
    const { gw } = await start(t);
    const token = await gw.token();
    const res = await postForm(gw, INTROSPECT_PATH, { token }, basic());
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await res.json(), {
      error: 'unauthorized_client',
      error_description: 'This client may not introspect tokens.',
    });
  });

  test('no or wrong client credentials: 401 invalid_client, Basic challenge for Basic', async (t) => {
    const { gw } = await start(t);
    const token = await gw.token();
    const none = await postForm(gw, INTROSPECT_PATH, { token });
    assert.equal(none.status, 401);
    assert.equal(none.headers.get('www-authenticate'), null);
    assert.equal(await errorOf(none), 'invalid_client');
    const wrong = await postForm(gw, INTROSPECT_PATH, { token }, basic(RESOURCE_SERVER.id, 'nope'));
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get('www-authenticate'), 'Basic realm="portaria"');
    assert.equal(await errorOf(wrong), 'invalid_client');
    // A bearer token is no client authentication here.
    const bearer = await postForm(gw, INTROSPECT_PATH, { token }, `Bearer ${token}`);
    assert.equal(bearer.status, 401);
    assert.equal(await errorOf(bearer), 'invalid_client');
  });

  test('limited like the token endpoint: the client bucket refuses with 429', async (t) => {
    const clock = new ManualClock(Date.now());
    const { gw } = await start(
      t,
      {
        tokenLimits: {
          perAddress: { enabled: false },
          perClient: { enabled: true, ratePerSecond: 1, burst: 1 },
          failedSecretBackoff: { enabled: false },
        },
      },
      clock,
    );
    const token = await gw.token();
    // The first success makes the (client, address) pair known: it then has its own bucket.
    assert.equal((await introspect(gw, token)).active, true);
    assert.equal((await introspect(gw, token)).active, true);
    const limited = await postForm(gw, INTROSPECT_PATH, { token }, asResourceServer());
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '1');
    await limited.arrayBuffer();
    clock.advance(1000);
    assert.equal((await introspect(gw, token)).active, true);
  });
});
