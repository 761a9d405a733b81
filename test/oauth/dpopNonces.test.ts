/**
 * Server-provided DPoP nonces (RFC 9449 §8, §9) with `dpop.nonces.enabled`: oauth4webapi's
 * nonce retry against both token endpoints and the edge, a fresh nonce on every refusal
 * offering DPoP, forged and expired nonces refused, and two gateways sharing the secret
 * file accepting each other's nonces while one with another secret does not.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import { ManualClock } from '../../src/lib/clock.js';
import { dpopKeys, dpopProof as proofOf } from '../helpers/dpopKeys.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type Gateway,
  problemOf,
  startGateway,
  TOKEN_PATH,
} from '../helpers/fixture.js';
import { tempDir } from '../helpers/process.js';
import { accessLineOf } from '../helpers/wait.js';

interface Options {
  readonly secretFile?: string;
  readonly clock?: ManualClock;
  readonly lifetimeSeconds?: number;
}

async function nonceGateway(t: TestContext, options: Options = {}): Promise<Gateway> {
  return startGateway(t, {
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    settings: (upstream) => ({
      dpop: {
        enabled: true,
        nonces: {
          enabled: true,
          lifetimeSeconds: options.lifetimeSeconds ?? 300,
          ...(options.secretFile === undefined ? {} : { secretFile: options.secretFile }),
        },
      },
      upstream: { default: null },
      routes: [{ id: 'orders', prefix: '/v1/orders', upstream, scopes: ['orders:read'] }],
    }),
  });
}

const as = (gw: Gateway): oauth.AuthorizationServer => ({
  issuer: 'https://portaria.test',
  token_endpoint: `${gw.url}/oauth2/token`,
});
const client: oauth.Client = { client_id: CLIENT_ID };

/** A client-credentials grant through oauth4webapi, retrying once on `use_dpop_nonce`. */
async function grantWithRetry(
  gw: Gateway,
  dpop: oauth.DPoPHandle,
): Promise<{ token: string; retried: boolean }> {
  const attempt = async () =>
    oauth.processClientCredentialsResponse(
      as(gw),
      client,
      await oauth.clientCredentialsGrantRequest(
        as(gw),
        client,
        oauth.ClientSecretPost(CLIENT_SECRET),
        new URLSearchParams(),
        { DPoP: dpop, [oauth.allowInsecureRequests]: true },
      ),
    );
  try {
    return { token: (await attempt()).access_token, retried: false };
  } catch (error) {
    assert.ok(oauth.isDPoPNonceError(error), `expected use_dpop_nonce, got ${error}`);
    const result = await attempt();
    assert.equal(result.token_type, 'dpop');
    return { token: result.access_token, retried: true };
  }
}

/** A protected request through oauth4webapi, retrying once on `use_dpop_nonce`. */
async function resourceWithRetry(
  url: string,
  token: string,
  dpop: oauth.DPoPHandle,
): Promise<{ status: number; retried: boolean }> {
  const attempt = () =>
    oauth.protectedResourceRequest(token, 'GET', new URL(url), new Headers(), null, {
      DPoP: dpop,
      [oauth.allowInsecureRequests]: true,
    });
  try {
    const res = await attempt();
    await res.arrayBuffer();
    return { status: res.status, retried: false };
  } catch (error) {
    assert.ok(oauth.isDPoPNonceError(error), `expected use_dpop_nonce, got ${error}`);
    const res = await attempt();
    await res.arrayBuffer();
    return { status: res.status, retried: true };
  }
}

describe('DPoP server nonces', () => {
  test('oauth4webapi is told use_dpop_nonce at /oauth2/token and at the edge, retries with the nonce, and passes', async (t) => {
    const gw = await nonceGateway(t);
    const keys = await dpopKeys();
    const dpop = oauth.DPoP(client, keys);
    const { token, retried } = await grantWithRetry(gw, dpop);
    assert.equal(retried, true, 'the first proof carried no nonce');
    assert.ok(decodeJwt(token).cnf);
    // The handle remembers the nonce per origin: the edge (same origin) accepts it at once.
    const first = await resourceWithRetry(`${gw.url}/v1/orders/1`, token, dpop);
    assert.deepEqual(first, { status: 200, retried: false });
    // A new handle over the same key knows no nonce: told at the edge, it retries.
    const fresh = oauth.DPoP(client, keys);
    const second = await resourceWithRetry(`${gw.url}/v1/orders/2`, token, fresh);
    assert.deepEqual(second, { status: 200, retried: true });
    assert.equal(gw.upstream.received.length, 2);
  });

  test('the answers: 400 use_dpop_nonce with DPoP-Nonce at both token endpoints, 401 with the DPoP challenge at the edge', async (t) => {
    const gw = await nonceGateway(t);
    const keys = await dpopKeys();
    const now = Math.floor(Date.now() / 1000);
    const oauthUrl = `${gw.url}/oauth2/token`;
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
    }).toString();
    const withoutNonce = await fetch(oauthUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        dpop: await proofOf(keys, 'POST', oauthUrl, { iat: now }),
      },
      body: form,
    });
    assert.equal(withoutNonce.status, 400);
    assert.equal(((await withoutNonce.json()) as { error: string }).error, 'use_dpop_nonce');
    const nonce = withoutNonce.headers.get('dpop-nonce') ?? '';
    assert.match(nonce, /^[A-Za-z0-9_-]{22}$/);

    const contractUrl = `${gw.url}${TOKEN_PATH}`;
    const contract = (proof: string) =>
      fetch(contractUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', dpop: proof },
        body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
      });
    const refused = await contract(await proofOf(keys, 'POST', contractUrl, { iat: now }));
    assert.equal(refused.status, 400);
    assert.equal((await problemOf(refused)).tipo, 'urn:portaria:problem:invalid-request');
    assert.equal(refused.headers.get('dpop-nonce'), nonce);
    const issued = await contract(await proofOf(keys, 'POST', contractUrl, { iat: now, nonce }));
    assert.equal(issued.status, 200);
    const body = (await issued.json()) as Record<string, string>;
    assert.equal(body.tipo_de_token, 'DPoP');
    const token = body.token_de_acesso as string;

    const resource = `${gw.url}/v1/orders/1`;
    const edge = (proof: string) =>
      fetch(resource, { headers: { authorization: `DPoP ${token}`, dpop: proof } });
    const noNonce = await edge(await proofOf(keys, 'GET', resource, { iat: now, token }));
    assert.equal(noNonce.status, 401);
    assert.match(
      noNonce.headers.get('www-authenticate') ?? '',
      /^DPoP algs="[^"]+", error="use_dpop_nonce"$/,
    );
    assert.equal(noNonce.headers.get('dpop-nonce'), nonce);
    const line = await accessLineOf(gw.logs, noNonce.headers.get('x-request-id') as string);
    assert.equal(line['portaria.reason'], 'dpop-nonce');
    const forged = await edge(
      await proofOf(keys, 'GET', resource, {
        iat: now,
        token,
        nonce: randomBytes(16).toString('base64url'),
      }),
    );
    assert.equal(forged.status, 401);
    assert.match(forged.headers.get('www-authenticate') ?? '', /error="use_dpop_nonce"/);
    const passed = await edge(await proofOf(keys, 'GET', resource, { iat: now, token, nonce }));
    assert.equal(passed.status, 200);
    await passed.arrayBuffer();

    // Every refusal offering DPoP carries a nonce; one in the Bearer scheme only does not.
    const anonymous = await fetch(resource);
    assert.equal(anonymous.status, 401);
    assert.match(anonymous.headers.get('www-authenticate') ?? '', /DPoP algs=/);
    assert.equal(anonymous.headers.get('dpop-nonce'), nonce);
    const bearer = await fetch(resource, { headers: { authorization: 'Bearer not.a.token' } });
    assert.equal(bearer.status, 401);
    assert.equal(bearer.headers.get('dpop-nonce'), null);
  });

  test('a nonce is good for one to two lifetimes: the next slot still takes it, the one after does not', async (t) => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
    const gw = await nonceGateway(t, { clock, lifetimeSeconds: 60 });
    const keys = await dpopKeys();
    const contractUrl = `${gw.url}${TOKEN_PATH}`;
    const iat = () => Math.floor(clock.now() / 1000);
    const contract = async (nonce?: string) =>
      fetch(contractUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          dpop: await proofOf(keys, 'POST', contractUrl, {
            iat: iat(),
            ...(nonce === undefined ? {} : { nonce }),
          }),
        },
        body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
      });
    const told = await contract();
    assert.equal(told.status, 400);
    await told.arrayBuffer();
    const nonce = told.headers.get('dpop-nonce') as string;
    clock.advance(60_000);
    const nextSlot = await contract(nonce);
    assert.equal(nextSlot.status, 200);
    await nextSlot.arrayBuffer();
    clock.advance(60_000);
    const expired = await contract(nonce);
    assert.equal(expired.status, 400);
    await expired.arrayBuffer();
    assert.notEqual(expired.headers.get('dpop-nonce'), nonce, 'a fresh nonce comes with it');
  });

  test('replicas sharing dpop.nonces.secretFile accept each other’s nonces; one with another secret refuses them', async (t) => {
    const dir = await tempDir(t, 'portaria-nonce-');
    const shared = join(dir, 'shared.secret');
    const other = join(dir, 'other.secret');
    await writeFile(shared, randomBytes(48).toString('base64'));
    await writeFile(other, randomBytes(48).toString('base64'));
    const a = await nonceGateway(t, { secretFile: shared });
    const b = await nonceGateway(t, { secretFile: shared });
    const c = await nonceGateway(t, { secretFile: other });
    const keys = await dpopKeys();
    const fromA = await fetch(`${a.url}/v1/orders/1`);
    await fromA.arrayBuffer();
    const nonce = fromA.headers.get('dpop-nonce') as string;
    const now = Math.floor(Date.now() / 1000);
    const issue = async (gw: Gateway) => {
      const url = `${gw.url}${TOKEN_PATH}`;
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          dpop: await proofOf(keys, 'POST', url, { iat: now, nonce }),
        },
        body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
      });
      await res.arrayBuffer();
      return res.status;
    };
    assert.equal(await issue(b), 200);
    assert.equal(await issue(c), 400);
  });

  test('a secret file that is short or missing stops the start, naming the setting and never the content', async (t) => {
    const dir = await tempDir(t, 'portaria-nonce-');
    const short = join(dir, 'short.secret');
    await writeFile(short, 'tooshort-secret');
    await assert.rejects(nonceGateway(t, { secretFile: short }), (error: Error) => {
      assert.match(error.message, /dpop\.nonces\.secretFile: .* at least 32 bytes/);
      assert.doesNotMatch(error.message, /tooshort-secret/);
      return true;
    });
    await assert.rejects(nonceGateway(t, { secretFile: join(dir, 'absent') }), /ENOENT/);
  });
});
