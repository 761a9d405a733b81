/**
 * DPoP (RFC 9449) end to end with oauth4webapi, a client library written by others: a
 * DPoP-bound token from `/oauth2/token` and from the contract's operation, used at the edge
 * with a fresh proof per request — and the attacks: the token as Bearer, a replayed proof,
 * a thief's own proof for a stolen token, a proof for another URL or method, a bearer token
 * where sender-constrained ones are required.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { calculateJwkThumbprint, decodeJwt, exportJWK } from 'jose';
import * as oauth from 'oauth4webapi';
import { dpopKeys } from '../helpers/dpopKeys.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type Gateway,
  problemOf,
  startGateway,
  TOKEN_PATH,
} from '../helpers/fixture.js';
import { accessLineOf } from '../helpers/wait.js';

interface Setup {
  gw: Gateway;
  as: oauth.AuthorizationServer;
  client: oauth.Client;
}

async function setup(t: TestContext): Promise<Setup> {
  const gw = await startGateway(t, {
    settings: (upstream) => ({
      dpop: { enabled: true },
      upstream: { default: null },
      routes: [
        { id: 'orders', prefix: '/v1/orders', upstream, scopes: ['orders:read'] },
        {
          id: 'payments',
          prefix: '/v1/payments',
          upstream,
          scopes: ['orders:read'],
          requireSenderConstrained: true,
        },
      ],
    }),
  });
  return {
    gw,
    as: { issuer: 'https://portaria.test', token_endpoint: `${gw.url}/oauth2/token` },
    client: { client_id: CLIENT_ID },
  };
}

async function dpopToken(s: Setup, dpop: oauth.DPoPHandle): Promise<string> {
  const request = () =>
    oauth.clientCredentialsGrantRequest(
      s.as,
      s.client,
      oauth.ClientSecretPost(CLIENT_SECRET),
      new URLSearchParams(),
      { DPoP: dpop, [oauth.allowInsecureRequests]: true },
    );
  const result = await oauth.processClientCredentialsResponse(s.as, s.client, await request());
  assert.equal(result.token_type, 'dpop');
  return result.access_token;
}

/** One request with a fresh proof from `dpop`; the proof it sent is kept. */
async function resource(
  url: string,
  token: string,
  dpop: oauth.DPoPHandle,
  method = 'GET',
): Promise<{ res: Response; proof: string }> {
  let proof = '';
  const capture: typeof fetch = async (input, init) => {
    proof = new Headers(init?.headers).get('dpop') ?? '';
    return fetch(input, init);
  };
  try {
    const res = await oauth.protectedResourceRequest(
      token,
      method,
      new URL(url),
      new Headers(),
      null,
      {
        DPoP: dpop,
        [oauth.allowInsecureRequests]: true,
        [oauth.customFetch]: capture,
      },
    );
    return { res, proof };
  } catch (error) {
    // A refusal with a challenge: the library throws, holding the answer.
    if (error instanceof oauth.WWWAuthenticateChallengeError) return { res: error.response, proof };
    throw error;
  }
}

/** A proof the library makes for `method` `url`, captured and never sent. */
async function unsentProof(
  dpop: oauth.DPoPHandle,
  token: string,
  method: string,
  url: string,
): Promise<string> {
  let proof = '';
  await oauth
    .protectedResourceRequest(token, method, new URL(url), new Headers(), null, {
      DPoP: dpop,
      [oauth.allowInsecureRequests]: true,
      [oauth.customFetch]: async (_input, init) => {
        proof = new Headers(init?.headers).get('dpop') ?? '';
        return new Response(null, { status: 204 });
      },
    })
    .catch(() => undefined);
  return proof;
}

describe('DPoP', () => {
  test('oauth4webapi gets a DPoP-bound token and uses it at the edge, a fresh proof per request', async (t) => {
    const s = await setup(t);
    const keys = await dpopKeys();
    const dpop = oauth.DPoP(s.client, keys);
    const token = await dpopToken(s, dpop);
    const jkt = await calculateJwkThumbprint(await exportJWK(keys.publicKey), 'sha256');
    assert.deepEqual(decodeJwt(token).cnf, { jkt });
    for (const path of ['/v1/orders/1', '/v1/payments/2']) {
      const { res } = await resource(`${s.gw.url}${path}`, token, dpop);
      assert.equal(res.status, 200, path);
      await res.arrayBuffer();
    }
    const { res: post } = await resource(`${s.gw.url}/v1/orders/3`, token, dpop, 'POST');
    assert.equal(post.status, 200);
    await post.arrayBuffer();
    assert.equal(s.gw.upstream.received.length, 3);
    assert.equal(s.gw.upstream.received[0]?.headers['x-client-id'], CLIENT_ID);
  });

  test('a DPoP-bound token sent as Bearer, or with no proof, is refused', async (t) => {
    const s = await setup(t);
    const dpop = oauth.DPoP(s.client, await dpopKeys());
    const token = await dpopToken(s, dpop);
    const bearer = await fetch(`${s.gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(bearer.status, 401);
    assert.match(
      bearer.headers.get('www-authenticate') ?? '',
      /^Bearer realm="portaria", error="invalid_token"/,
    );
    const line = await accessLineOf(s.gw.logs, bearer.headers.get('x-request-id') as string);
    assert.equal(line['portaria.reason'], 'dpop-as-bearer');
    const noProof = await fetch(`${s.gw.url}/v1/orders/1`, {
      headers: { authorization: `DPoP ${token}` },
    });
    assert.equal(noProof.status, 401);
    assert.equal((await problemOf(noProof)).tipo, 'urn:portaria:problem:dpop-proof-invalid');
    assert.match(
      noProof.headers.get('www-authenticate') ?? '',
      /^DPoP algs="[^"]*ES256[^"]*", error="invalid_dpop_proof"$/,
    );
    assert.equal(s.gw.upstream.received.length, 0);
  });

  test('a replayed proof, a proof for another URL or method, and a thief’s own proof are refused', async (t) => {
    const s = await setup(t);
    const dpop = oauth.DPoP(s.client, await dpopKeys());
    const token = await dpopToken(s, dpop);
    const { res, proof } = await resource(`${s.gw.url}/v1/orders/1`, token, dpop);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const send = (path: string, method = 'GET', sentProof = proof) =>
      fetch(`${s.gw.url}${path}`, {
        method,
        headers: { authorization: `DPoP ${token}`, dpop: sentProof },
      });
    const reasonOf = async (answer: Response): Promise<unknown> => {
      assert.equal(answer.status, 401);
      await answer.arrayBuffer();
      const line = await accessLineOf(s.gw.logs, answer.headers.get('x-request-id') as string);
      return line['portaria.reason'];
    };
    assert.equal(await reasonOf(await send('/v1/orders/1')), 'dpop-replayed');
    assert.equal(await reasonOf(await send('/v1/orders/2')), 'dpop-htu');
    assert.equal(await reasonOf(await send('/v1/orders/1', 'DELETE')), 'dpop-htm');
    // The thief holds the token and makes a valid proof with a key of its own.
    const thief = oauth.DPoP(s.client, await dpopKeys());
    const stolen = await resource(`${s.gw.url}/v1/orders/1`, token, thief);
    assert.equal(await reasonOf(stolen.res), 'dpop-key-mismatch');
    // Two proofs at once, in parallel, of one jti: exactly one passes.
    const fresh = await resource(`${s.gw.url}/v1/orders/9`, token, dpop);
    assert.equal(fresh.res.status, 200);
    await fresh.res.arrayBuffer();
    assert.equal(s.gw.upstream.received.length, 2);
  });

  test('one proof sent in parallel passes exactly once', async (t) => {
    const s = await setup(t);
    const keys = await dpopKeys();
    const dpop = oauth.DPoP(s.client, keys);
    const token = await dpopToken(s, dpop);
    const proof = await unsentProof(dpop, token, 'GET', `${s.gw.url}/v1/orders/5`);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        fetch(`${s.gw.url}/v1/orders/5`, {
          headers: { authorization: `DPoP ${token}`, dpop: proof },
        }),
      ),
    );
    const statuses = answers.map((a) => a.status).sort();
    for (const a of answers) await a.arrayBuffer();
    assert.deepEqual(statuses, [200, 401, 401, 401, 401, 401, 401, 401]);
  });

  test('a bearer token is refused where sender-constrained tokens are required, and with a proof beside it', async (t) => {
    const s = await setup(t);
    const bearer = await s.gw.token();
    const constrained = await fetch(`${s.gw.url}/v1/payments/1`, {
      headers: { authorization: `Bearer ${bearer}` },
    });
    assert.equal(constrained.status, 401);
    assert.equal(
      (await problemOf(constrained)).tipo,
      'urn:portaria:problem:token-binding-required',
    );
    assert.equal(
      (await fetch(`${s.gw.url}/v1/orders/1`, { headers: { authorization: `Bearer ${bearer}` } }))
        .status,
      200,
    );
    const withProof = await fetch(`${s.gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${bearer}`, dpop: 'a.b.c' },
    });
    assert.equal(withProof.status, 401);
    const asDpop = await fetch(`${s.gw.url}/v1/orders/1`, {
      headers: { authorization: `DPoP ${bearer}`, dpop: 'a.b.c' },
    });
    assert.equal(asDpop.status, 401);
    assert.match(
      asDpop.headers.get('www-authenticate') ?? '',
      /^DPoP algs="[^"]+", error="invalid_token"$/,
    );
  });

  test('the contract operation binds its token to a DPoP proof and says DPoP; a bad proof is a 400', async (t) => {
    const s = await setup(t);
    const keys = await dpopKeys();
    const dpop = oauth.DPoP(s.client, keys);
    // The library makes the proof for the contract's URL and method as for any request.
    const proof = await unsentProof(dpop, 'unused', 'POST', `${s.gw.url}${TOKEN_PATH}`);
    const issue = (sentProof: string) =>
      fetch(`${s.gw.url}${TOKEN_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', dpop: sentProof },
        body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
      });
    const res = await issue(proof);
    assert.equal(res.status, 200);
    const body = (await res.json()) as Record<string, string>;
    assert.equal(body.tipo_de_token, 'DPoP');
    const jkt = await calculateJwkThumbprint(await exportJWK(keys.publicKey), 'sha256');
    assert.deepEqual(decodeJwt(body.token_de_acesso as string).cnf, { jkt });
    const replayed = await issue(proof);
    assert.equal(replayed.status, 400);
    assert.equal((await problemOf(replayed)).tipo, 'urn:portaria:problem:invalid-request');
    const oauthReplay = await fetch(`${s.gw.url}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: 'not-a-proof' },
      body: `grant_type=client_credentials&client_id=${CLIENT_ID}&client_secret=${CLIENT_SECRET}`,
    });
    assert.equal(oauthReplay.status, 400);
    assert.equal(((await oauthReplay.json()) as { error: string }).error, 'invalid_dpop_proof');
  });

  test('a client requiring sender-constrained tokens gets none without a proof; its bearer tokens stop passing', async (t) => {
    const s = await setup(t);
    const bearer = await s.gw.token();
    const file = join(s.gw.dir, 'clients.json');
    const clients = JSON.parse(await readFile(file, 'utf8'));
    for (const entry of clients.clients) {
      if (entry.id === CLIENT_ID) entry.requireSenderConstrained = true;
    }
    await writeFile(file, JSON.stringify(clients));
    await s.gw.app.reload();
    // Issued before: refused at the edge now, on any route.
    const old = await fetch(`${s.gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${bearer}` },
    });
    assert.equal(old.status, 401);
    assert.equal((await problemOf(old)).tipo, 'urn:portaria:problem:token-binding-required');
    const contract = await fetch(`${s.gw.url}${TOKEN_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
    });
    assert.equal(contract.status, 400);
    assert.equal((await problemOf(contract)).tipo, 'urn:portaria:problem:invalid-request');
    const form = await fetch(`${s.gw.url}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=client_credentials&client_id=${CLIENT_ID}&client_secret=${CLIENT_SECRET}`,
    });
    assert.equal(form.status, 400);
    assert.equal(((await form.json()) as { error: string }).error, 'invalid_request');
    // With a proof: a DPoP token, which passes.
    const dpop = oauth.DPoP(s.client, await dpopKeys());
    const token = await dpopToken(s, dpop);
    const { res } = await resource(`${s.gw.url}/v1/orders/1`, token, dpop);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  });

  test('the authorization server and resource metadata name the proof algorithms', async (t) => {
    const s = await setup(t);
    const res = await fetch(`${s.gw.url}/.well-known/oauth-authorization-server`);
    const metadata = (await res.json()) as Record<string, unknown>;
    const algorithms = ['ES256', 'ES384', 'EdDSA', 'PS256', 'RS256'];
    assert.deepEqual(metadata.dpop_signing_alg_values_supported, algorithms);
    const resource = await fetch(`${s.gw.url}/.well-known/oauth-protected-resource/v1/payments`);
    assert.equal(resource.status, 200);
    const described = (await resource.json()) as Record<string, unknown>;
    assert.deepEqual(described.dpop_signing_alg_values_supported, algorithms);
  });
});
