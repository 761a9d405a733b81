/**
 * A group (`server.workers` > 1) with `oauth.replayStore: local`: a client assertion's
 * `jti` is single use across the group, in the primary's one replay store, not once per
 * worker (node:cluster hands each new connection to the next worker).
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SignJWT } from 'jose';
import { JWT_BEARER_ASSERTION } from '../../src/oauth/clientAssertion.js';
import { ecKey } from '../helpers/jwksServer.js';
import { send, startGroup, startUpstream, waitForLines } from './groupGateway.js';

const WORKERS = 2;
const ISSUER = 'https://portaria.test';
const SIGNER = 'signer';

describe('client assertions in a group of workers', () => {
  test('one assertion is accepted once by the group: fresh connections to both workers, one 200', async (t) => {
    const upstream = await startUpstream(t);
    const key = ecKey('k1');
    const group = await startGroup(
      t,
      WORKERS,
      {
        issuer: ISSUER,
        upstream: { default: { upstream: upstream.url } },
        oauth: { replayStore: 'local' },
        // Replays count as failures: the back-off would answer 429 after the free ones.
        tokenLimits: {
          perAddress: { enabled: false },
          perClient: { enabled: false },
          failedSecretBackoff: { enabled: false },
        },
      },
      [
        {
          id: SIGNER,
          secrets: [],
          scopes: ['orders:read'],
          authMethods: ['private_key_jwt'],
          jwksFile: 'signer.jwks.json',
        },
      ],
    );
    // Read at the first assertion, by each worker.
    await writeFile(join(group.dir, 'signer.jwks.json'), JSON.stringify({ keys: [key.jwk] }));
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({
      iss: SIGNER,
      sub: SIGNER,
      aud: `${ISSUER}/oauth2/token`,
      jti: crypto.randomUUID(),
      exp: now + 60,
    })
      .setProtectedHeader({ alg: 'ES256', kid: key.kid })
      .sign(key.privateKey);
    const body = new URLSearchParams({
      grant_type: 'client_credentials',
      client_assertion_type: JWT_BEARER_ASSERTION,
      client_assertion: assertion,
    }).toString();
    // Fresh connections until both workers have answered one (the kernel, not the test,
    // picks the worker that accepts: six connections could all land on one), at most 40.
    const statuses: number[] = [];
    const answeredBy = (): Set<unknown> =>
      new Set(
        group
          .lines()
          .filter((l) => l.msg === 'request' && l['http.route'] === 'oauth-token')
          .map((l) => l.worker),
      );
    while (statuses.length < 6 || (answeredBy().size < WORKERS && statuses.length < 40)) {
      const answer = await send(`${group.files.publicUrl}/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      statuses.push(answer.status);
      if (answer.status !== 200)
        assert.equal(JSON.parse(answer.body).error, 'invalid_client', answer.body);
      // The access line is written as the response closes: let it arrive.
      await waitForLines(
        group,
        'the access line',
        (l) => l.msg === 'request' && l['http.route'] === 'oauth-token',
        statuses.length,
      );
    }
    assert.deepEqual(statuses, [200, ...statuses.slice(1).map(() => 401)]);
    const workers = answeredBy();
    assert.equal(workers.size, WORKERS, JSON.stringify([...workers]));
  });
});
