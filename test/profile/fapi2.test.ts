/**
 * `profile: fapi2` (FAPI 2.0 Security Profile): every contradiction named at start, what
 * the profile makes of a valid file (sender-constrained tokens on every route and for every
 * client), and a real gateway under it issuing DPoP-bound tokens only.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import { validateConfig } from '../../src/config/validateConfig.js';
import { dpopProof } from '../helpers/dpopKeys.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  DEFAULT_CLIENTS,
  problemOf,
  startGateway,
  TOKEN_PATH,
} from '../helpers/fixture.js';
import { newKeyPair } from '../helpers/keyPairs.js';

const FAPI2 = { profile: 'fapi2', dpop: { enabled: true, algorithms: ['ES256', 'PS256'] } };

function problemsOf(settings: unknown): readonly string[] {
  try {
    validateConfig(settings, { baseDir: '/' });
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.problems;
  }
  assert.fail('expected a ConfigError');
}

describe('profile fapi2', () => {
  test('every contradiction is named at once', () => {
    const problems = problemsOf({
      profile: 'fapi2',
      token: { algorithm: 'RS256' },
      clockSkewSeconds: 120,
      dpop: { enabled: true, proofWindowSeconds: 120 },
      routes: [{ id: 'a', prefix: '/a', upstream: 'http://u', requireSenderConstrained: false }],
      issuers: [{ id: 'idp', issuer: 'https://idp.example', jwksUri: 'https://idp.example/jwks' }],
    });
    for (const setting of [
      'token.algorithm',
      'clockSkewSeconds',
      'dpop.algorithms',
      'dpop.proofWindowSeconds',
      'routes[0].requireSenderConstrained',
      'issuers[0].algorithms',
    ]) {
      assert.ok(
        problems.some((p) => p.startsWith(`${setting}:`)),
        `${setting} in:\n${problems.join('\n')}`,
      );
    }
    const noConstraint = problemsOf({ profile: 'fapi2' });
    assert.ok(noConstraint.some((p) => p.startsWith('dpop.enabled: must be true')));
  });

  test('a valid file: every route sender-constrained', () => {
    const config = validateConfig(
      {
        ...FAPI2,
        routes: [{ id: 'a', prefix: '/a', upstream: 'http://u' }],
        upstream: { default: { upstream: 'http://u' } },
      },
      { baseDir: '/' },
    );
    assert.equal(config.routes[0]?.requireSenderConstrained, true);
    assert.equal(config.upstream.default?.requireSenderConstrained, true);
  });

  test('the clients file: secret-only clients are refused at start', async (t) => {
    await assert.rejects(
      startGateway(t, { settings: () => FAPI2 }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.some((p) => p.includes('not FAPI 2.0 methods under profile fapi2')),
    );
  });

  test('a gateway under fapi2 issues DPoP-bound tokens only and refuses a request without a proof', async (t) => {
    const gw = await startGateway(t, {
      clients: DEFAULT_CLIENTS.filter((c) => !c.disabled).map((c) => ({
        ...c,
        extra: { authMethods: ['private_key_jwt'], jwksFile: `${c.id}.jwks.json` },
      })),
      settings: (upstream) => ({ ...FAPI2, upstream: { default: { upstream } } }),
    });
    const contract = (headers: Record<string, string> = {}) =>
      fetch(`${gw.url}${TOKEN_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
      });
    const bare = await contract();
    assert.equal(bare.status, 400);
    assert.equal((await problemOf(bare)).tipo, 'urn:portaria:problem:invalid-request');

    const key = newKeyPair('ec', { namedCurve: 'P-256' });
    const proof = (htm: string, htu: string, token?: string) => dpopProof(key, htm, htu, { token });
    const issued = await contract({ dpop: await proof('POST', `${gw.url}${TOKEN_PATH}`) });
    assert.equal(issued.status, 200);
    const body = (await issued.json()) as Record<string, string>;
    assert.equal(body.tipo_de_token, 'DPoP');
    const token = body.token_de_acesso as string;
    const used = await fetch(`${gw.url}/v1/orders/1`, {
      headers: {
        authorization: `DPoP ${token}`,
        dpop: await proof('GET', `${gw.url}/v1/orders/1`, token),
      },
    });
    assert.equal(used.status, 200);
    // The same token as Bearer: a DPoP-bound token is never a bearer token.
    const refused = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(refused.status, 401);
  });
});
