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
    // Fresh connections, eight at a time, until every worker has answered one of the phase
    // (the workers accept for themselves: a burst can land on one), at most 200; each
    // answer must be `status`.
    const askEveryWorker = async (phase: string, status: number): Promise<void> => {
      const answered = (): number =>
        new Set(
          group
            .lines()
            .filter((l) => String(l['portaria.request_id']).startsWith(phase))
            .map((l) => l.worker),
        ).size;
      let sent = 0;
      while (answered() < WORKERS && sent < 200) {
        const batch = Array.from({ length: 8 }, () => sent++);
        const answers = await Promise.all(
          batch.map((i) =>
            send(decisionUrl, {
              headers: {
                authorization: `Bearer ${token}`,
                'x-original-method': 'GET',
                'x-original-uri': `/v1/orders/${i}`,
                'x-request-id': `${phase}${i}`,
              },
            }),
          ),
        );
        for (const answer of answers) assert.equal(answer.status, status, answer.body);
        await waitForLines(
          group,
          `the ${phase} access lines`,
          (l) => String(l['portaria.request_id']).startsWith(phase),
          sent,
        );
      }
      assert.equal(answered(), WORKERS, `${phase}: answered by ${answered()} worker(s)`);
    };
    await askEveryWorker('allowed-', 200);
    const revoked = await revoke(group, { jti: jtiOf(token) });
    assert.equal(revoked.status, 201, revoked.body);
    await askEveryWorker('revoked-', 401);
  });
});
