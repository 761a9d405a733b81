/**
 * The key-set downloads of `private_key_jwt` clients (`jwksUri`) are reported like a
 * trusted issuer's: each log line names the client, and `portaria_jwks_fetches_total`
 * counts them under `issuer="client:<id>"`, so an operator can tell which partner's key
 * server fails.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SignJWT } from 'jose';
import { JWT_BEARER_ASSERTION } from '../../src/oauth/clientAssertion.js';
import { DEFAULT_CLIENTS, startGateway } from '../helpers/fixture.js';
import {
  ecKey,
  jwksOf,
  serve,
  startJwksServer,
  status,
  type TestKey,
} from '../helpers/jwksServer.js';
import { sample, scrape } from '../helpers/metrics.js';
import { parsedLogs, waitFor } from '../helpers/wait.js';
import { postForm } from './formRequests.js';

const TOKEN_ENDPOINT = 'https://portaria.test/oauth2/token';

function assertion(id: string, key: TestKey): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: id,
    sub: id,
    aud: TOKEN_ENDPOINT,
    jti: crypto.randomUUID(),
    exp: now + 60,
  })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid })
    .sign(key.privateKey);
}

function keyClient(id: string, jwksUri: string) {
  return {
    id,
    secret: '',
    scopes: ['orders:read'],
    extra: { authMethods: ['private_key_jwt'], jwksUri },
  };
}

describe('client key-set downloads', () => {
  test('log the client and are counted per client in portaria_jwks_fetches_total', async (t) => {
    const key = ecKey('k1');
    const good = await startJwksServer(t, serve(jwksOf(key)));
    const broken = await startJwksServer(t, status(500));
    const gw = await startGateway(t, {
      clients: [
        ...DEFAULT_CLIENTS,
        keyClient('partner-ok', good.url),
        keyClient('partner-down', broken.url),
      ],
    });
    const form = async (id: string) => ({
      grant_type: 'client_credentials',
      client_assertion_type: JWT_BEARER_ASSERTION,
      client_assertion: await assertion(id, key),
    });
    const ok = await postForm(gw, '/oauth2/token', await form('partner-ok'));
    assert.equal(ok.status, 200, await ok.clone().text());
    const down = await postForm(gw, '/oauth2/token', await form('partner-down'));
    assert.equal(down.status, 401);
    await down.arrayBuffer();

    const text = await scrape(gw.adminUrl);
    const series = (issuer: string, outcome: string) =>
      sample(
        text,
        `portaria_jwks_fetches_total{issuer="${issuer}",trigger="startup",outcome="${outcome}"}`,
      );
    assert.equal(series('client:partner-ok', 'ok'), 1);
    assert.equal(series('client:partner-down', 'error'), 1);

    const failed = await waitFor('the failed download’s log line', () =>
      parsedLogs(gw.logs).find((l) => l.msg === 'client issuer keys fetch failed'),
    );
    assert.equal(failed.client, 'partner-down');
    assert.equal(failed.issuer, undefined, 'no placeholder issuer');
    const fetched = parsedLogs(gw.logs).find((l) => l.msg === 'client issuer keys fetched');
    assert.equal(fetched?.client, 'partner-ok');
    assert.equal(fetched?.issuer, undefined);
  });
});
