/**
 * RFC 7009 token revocation: a client revokes its own token through the gateway's
 * revocation store (every replica refuses it within 1 s); any other token is answered 200
 * and nothing changes; client authentication and limits as at the token endpoint.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { decodeJwt } from 'jose';
import { type Gateway, problemOf, startGateway } from '../helpers/fixture.js';
import { ecKey, jwksOf, serve, startJwksServer } from '../helpers/jwksServer.js';
import { sample, scrape } from '../helpers/metrics.js';
import { refusedAsRevoked } from '../helpers/redisFixtures.js';
import { startRedis } from '../helpers/redisServer.js';
import { signWith, signWithGatewayKey, validClaims } from '../helpers/tokens.js';
import { parsedLogs } from '../helpers/wait.js';
import {
  basic,
  CLIENTS,
  errorOf,
  postForm,
  REVOKE_PATH,
  statusThroughRoute,
} from './formRequests.js';

function start(t: TestContext, extra: Record<string, unknown> = {}): Promise<Gateway> {
  return startGateway(t, { clients: CLIENTS, settings: () => extra });
}

async function revoke(
  gw: Gateway,
  token: string,
  authorization = basic(),
  more: Record<string, string> = {},
): Promise<Response> {
  return postForm(gw, REVOKE_PATH, { token, ...more }, authorization);
}

async function expectDone(res: Response): Promise<void> {
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.equal(await res.text(), '');
}

async function revocationEntries(gw: Gateway): Promise<number | undefined> {
  return sample(await scrape(gw.adminUrl), 'portaria_revocation_entries');
}

describe('token revocation (RFC 7009)', () => {
  test('a client revokes its own token: 200, then the edge refuses it', async (t) => {
    const gw = await start(t);
    const token = await gw.token();
    const other = await gw.token();
    assert.equal(await statusThroughRoute(gw, token), 200);
    await expectDone(await revoke(gw, token));
    const res = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 401);
    assert.equal((await problemOf(res)).tipo, 'urn:portaria:problem:token-revoked');
    assert.equal(await statusThroughRoute(gw, other), 200, 'by jti: its other tokens live on');
    const audit = parsedLogs(gw.logs).find((l) => l.msg === 'token revoked by its client');
    assert.equal(audit?.clientId, 'acme');
    assert.equal(audit?.jti, decodeJwt(token).jti);
  });

  test('the hint is advisory: any token_type_hint revokes the access token all the same', async (t) => {
    const gw = await start(t);
    const token = await gw.token();
    await expectDone(await revoke(gw, token, basic(), { token_type_hint: 'refresh_token' }));
    assert.equal(await statusThroughRoute(gw, token), 401);
  });

  test('client_secret_post authenticates as well as Basic', async (t) => {
    const gw = await start(t);
    const token = await gw.token();
    const res = await postForm(gw, REVOKE_PATH, {
      token,
      client_id: 'acme',
      client_secret: 'acme-secret-0123456789abcdefghijklmnopqrstu',
    });
    await expectDone(res);
    assert.equal(await statusThroughRoute(gw, token), 401);
  });

  test('another client’s token: 200 and nothing changes', async (t) => {
    const gw = await start(t);
    const readers = await gw.token('reader', 'reader-secret-0123456789abcdefghijklmnopq');
    await expectDone(await revoke(gw, readers));
    assert.equal(await statusThroughRoute(gw, readers), 200);
    assert.equal(await revocationEntries(gw), 0);
  });

  test('unknown, malformed, expired and foreign tokens: 200 and nothing changes', async (t) => {
    const partner = ecKey('p1');
    const jwks = await startJwksServer(t, serve(jwksOf(partner)));
    const gw = await start(t, {
      issuers: [
        {
          id: 'partner',
          issuer: 'https://idp.partner.test',
          jwksUri: jwks.url,
          audiences: ['partner-api'],
          algorithms: ['ES256'],
        },
      ],
    });
    const now = Math.floor(Date.now() / 1000);
    const expired = await signWithGatewayKey(
      gw,
      validClaims(gw, { iat: now - 900, nbf: now - 900, exp: now - 300 }),
    );
    // A trusted partner's token naming our client: the partner's to revoke, not ours.
    const partnerToken = await signWith(
      partner.privateKey,
      'ES256',
      {
        iss: 'https://idp.partner.test',
        sub: 'acme',
        client_id: 'acme',
        aud: 'partner-api',
        iat: now,
        exp: now + 300,
        jti: randomUUID(),
      },
      { kid: partner.kid },
    );
    const unknownIssuer = await signWith(
      ecKey('x').privateKey,
      'ES256',
      validClaims(gw, { iss: 'https://elsewhere.test' }),
      { kid: 'x' },
    );
    for (const token of [
      'not-a-token',
      'a.b.c',
      'x'.repeat(20_000 / 2),
      expired,
      partnerToken,
      unknownIssuer,
    ]) {
      await expectDone(await revoke(gw, token));
    }
    assert.equal(await revocationEntries(gw), 0);
    assert.equal(await statusThroughRoute(gw, partnerToken), 200);
  });

  test('an already revoked token: 200 again', async (t) => {
    const gw = await start(t);
    const token = await gw.token();
    await expectDone(await revoke(gw, token));
    await expectDone(await revoke(gw, token));
    assert.equal(await revocationEntries(gw), 1);
  });

  test('refuses without client authentication, with wrong credentials, without token', async (t) => {
    const gw = await start(t);
    const token = await gw.token();
    const none = await postForm(gw, REVOKE_PATH, { token });
    assert.equal(none.status, 401);
    assert.equal(await errorOf(none), 'invalid_client');
    const wrong = await revoke(gw, token, basic('acme', 'wrong-secret'));
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get('www-authenticate'), 'Basic realm="portaria"');
    assert.equal(wrong.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await wrong.json(), {
      error: 'invalid_client',
      error_description: 'The client credentials were not accepted.',
    });
    const missing = await postForm(gw, REVOKE_PATH, {}, basic());
    assert.equal(missing.status, 400);
    assert.equal(await errorOf(missing), 'invalid_request');
    const twice = await fetch(gw.url + REVOKE_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic() },
      body: `token=${token}&token=${token}`,
    });
    assert.equal(twice.status, 400);
    assert.equal(await errorOf(twice), 'invalid_request');
    assert.equal(await statusThroughRoute(gw, token), 200, 'nothing was revoked');
  });

  test('POST with a form only: 405 with Allow, 415 for another media type', async (t) => {
    const gw = await start(t);
    const get = await fetch(gw.url + REVOKE_PATH);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    await get.arrayBuffer();
    const json = await fetch(gw.url + REVOKE_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic() },
      body: '{"token":"x"}',
    });
    assert.equal(json.status, 415);
    await json.arrayBuffer();
    assert.equal(gw.upstream.received.length, 0, 'never forwarded');
  });

  test('shares the token endpoint’s limits: the client bucket counts revocations', async (t) => {
    const gw = await start(t, {
      tokenLimits: {
        perAddress: { enabled: false },
        perClient: { enabled: true, ratePerSecond: 0.001, burst: 2 },
        failedSecretBackoff: { enabled: false },
      },
    });
    const token = await gw.token();
    // Known (client, address) pairs have a bucket of their own: a few more requests.
    let answered = 0;
    for (; answered < 6; answered++) {
      const res = await revoke(gw, 'unknown');
      await res.arrayBuffer();
      if (res.status === 429) break;
      assert.equal(res.status, 200);
    }
    assert.ok(answered < 6, 'the client bucket ran out');
    const limited = await revoke(gw, token);
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    await limited.arrayBuffer();
    assert.equal(await statusThroughRoute(gw, token), 200);
  });

  test('two gateways sharing Redis: revoked through one, refused by the other within 1 s', async (t) => {
    const redis = await startRedis(t);
    const shared = { revocation: { store: 'redis' }, redis: { url: redis.url } };
    const a = await startGateway(t, { clients: CLIENTS, settings: () => shared });
    const b = await startGateway(t, {
      upstream: a.upstream,
      settings: () => ({
        ...shared,
        keys: { dir: join(a.dir, 'keys') },
        clients: { file: join(a.dir, 'clients.json') },
      }),
    });
    const token = await a.token();
    assert.equal(await statusThroughRoute(b, token), 200);
    await expectDone(await revoke(a, token));
    const elapsed = await refusedAsRevoked(b.url, token, 2000);
    assert.ok(elapsed < 1000, `replica B refused the token after ${Math.round(elapsed)} ms`);
  });
});
