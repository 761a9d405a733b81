/**
 * A DPoP proof is single-use across replicas: two gateways sharing one signing key and one
 * real Redis (`oauth.replayStore: redis`) — a proof accepted by one is refused by the
 * other, and one proof sent to both at once passes exactly once.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { calculateJwkThumbprint, exportJWK } from 'jose';
import { dpopProof } from '../helpers/dpopKeys.js';
import { CLIENT_ID, CLIENT_SECRET, type Gateway, startGateway } from '../helpers/fixture.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { redisConfig } from '../helpers/redisFixtures.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { accessLineOf } from '../helpers/wait.js';

const key = newKeyPair('ec', { namedCurve: 'P-256' });

async function replica(t: TestContext, redis: RedisServer, keysDir?: string): Promise<Gateway> {
  return startGateway(t, {
    settings: (upstream) => ({
      dpop: { enabled: true },
      oauth: { replayStore: 'redis' },
      redis: redisConfig(redis),
      upstream: { default: { upstream } },
      ...(keysDir === undefined ? {} : { keys: { dir: keysDir } }),
    }),
  });
}

/** A proof of `key` for `method url` (a fresh jti unless given), naming `token` when given. */
const proof = (method: string, url: string, token?: string, jti?: string): Promise<string> =>
  dpopProof(key, method, url, { token, jti });

test('a DPoP proof accepted by one replica is refused by the other; sent to both at once, it passes once', async (t) => {
  const redis = await startRedis(t);
  const a = await replica(t, redis);
  const b = await replica(t, redis, join(a.dir, 'keys'));
  const tokenUrl = `${a.url}/oauth2/token`;
  const issued = await fetch(tokenUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      dpop: await proof('POST', tokenUrl),
    },
    body: `grant_type=client_credentials&client_id=${CLIENT_ID}&client_secret=${CLIENT_SECRET}`,
  });
  assert.equal(issued.status, 200);
  const { access_token: token, token_type } = (await issued.json()) as Record<string, string>;
  assert.equal(token_type, 'DPoP');
  const jkt = await calculateJwkThumbprint(await exportJWK(key.publicKey), 'sha256');
  assert.equal(
    JSON.parse(Buffer.from((token as string).split('.')[1] as string, 'base64url').toString()).cnf
      .jkt,
    jkt,
  );

  // The proof names the URL the client used, and the replicas listen on different ports:
  // a replay at the other replica is the same jti in a proof made for its URL.
  const send = (gw: Gateway, sent: string) =>
    fetch(`${gw.url}/v1/orders/1`, { headers: { authorization: `DPoP ${token}`, dpop: sent } });
  const jti = crypto.randomUUID();
  assert.equal((await send(a, await proof('GET', `${a.url}/v1/orders/1`, token, jti))).status, 200);
  const atB = await send(b, await proof('GET', `${b.url}/v1/orders/1`, token, jti));
  assert.equal(atB.status, 401);
  const line = await accessLineOf(b.logs, atB.headers.get('x-request-id') as string);
  assert.equal(line['portaria.reason'], 'dpop-replayed');
  assert.equal((await send(b, await proof('GET', `${b.url}/v1/orders/1`, token))).status, 200);

  // One jti in two proofs, one for each replica, sent at once: exactly one passes.
  const shared = crypto.randomUUID();
  const pair = await Promise.all(
    [a, b].map(async (gw) => send(gw, await proof('GET', `${gw.url}/v1/orders/1`, token, shared))),
  );
  assert.deepEqual(pair.map((r) => r.status).sort(), [200, 401]);
});
