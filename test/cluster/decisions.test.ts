/**
 * Authorizer mode in a group (`server.workers` > 1): every worker answers decisions on the
 * shared decision port, and a revocation the admin API acknowledged is refused by every
 * worker at once.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { jtiOf, revoke, send, startGroup, tokenFor, waitForLines } from './groupGateway.js';

const WORKERS = 3;

describe('decisions in a group of workers', () => {
  test('every worker decides; a revoked token is refused by all of them at once', async (t) => {
    const group = await startGroup(t, WORKERS, {
      mode: 'authorizer',
      server: { trustedProxies: ['127.0.0.1'] },
      authorizer: { host: '127.0.0.1', port: 0, grpc: { enabled: false } },
      routes: [{ id: 'orders', prefix: '/v1/orders', scopes: ['orders:read'] }],
    });
    const lines = await waitForLines(
      group,
      'every worker answering decisions',
      (l) => l.msg === 'answering decisions',
      WORKERS,
    );
    const urls = new Set(lines.map((l) => l.authorizerUrl));
    assert.equal(urls.size, 1, `one shared decision port: ${[...urls]}`);
    const decisionUrl = `${[...urls][0]}/nginx`;
    const token = JSON.parse((await tokenFor(group)).body).token_de_acesso as string;
    // Eight connections at a time: the workers accept for themselves, and one idle worker
    // would take every connection of a sequential loop.
    const ask = async (count: number): Promise<number[]> => {
      const statuses: number[] = [];
      let next = 0;
      const lane = async (): Promise<void> => {
        while (next < count) {
          const i = next++;
          const answer = await send(decisionUrl, {
            headers: {
              authorization: `Bearer ${token}`,
              'x-original-method': 'GET',
              'x-original-uri': `/v1/orders/${i}`,
            },
          });
          statuses.push(answer.status);
        }
      };
      await Promise.all(Array.from({ length: 8 }, lane));
      return statuses;
    };
    assert.deepEqual(new Set(await ask(24)), new Set([200]));
    const pids = new Set(
      group
        .lines()
        .filter((l) => l['portaria.decision.entry'] === 'nginx')
        .map((l) => l.worker),
    );
    assert.ok(pids.size > 1, `decisions answered by ${pids.size} worker(s)`);
    const revoked = await revoke(group, { jti: jtiOf(token) });
    assert.equal(revoked.status, 201, revoked.body);
    assert.deepEqual(new Set(await ask(24)), new Set([401]));
  });
});
