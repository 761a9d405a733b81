/**
 * A group (`server.workers` > 1): a revocation the admin API acknowledged is enforced by
 * every worker before the 201, the token being in every worker's verified-token cache.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { metric } from '../helpers/metrics.js';
import {
  accessToken,
  jtiOf,
  protectedRequests,
  revoke,
  startGroup,
  startUpstream,
} from './groupGateway.js';

const WORKERS = 3;

describe('revocations in a group of workers', () => {
  for (const store of ['local', 'memory'] as const) {
    test(`a token revoked through the admin API is refused by every worker at once (${store} store)`, async (t) => {
      const upstream = await startUpstream(t);
      const group = await startGroup(t, WORKERS, {
        upstream: { default: { upstream: upstream.url } },
        revocation: { store, file: 'revocations.log' },
      });
      const token = await accessToken(group);
      // Enough connections that every worker verified and cached the token.
      const before = await protectedRequests(group, token, 30);
      assert.deepEqual(new Set(before), new Set([200]));
      assert.equal(
        await metric(group.files.adminUrl, 'portaria_verify_cache_entries'),
        WORKERS,
        'each worker holds the token in its own cache',
      );

      const revoked = await revoke(group, { jti: jtiOf(token) });
      assert.equal(revoked.status, 201, revoked.body);
      const after = await protectedRequests(group, token, 60, 12);
      assert.deepEqual(new Set(after), new Set([401]), `statuses after the 201: ${after}`);

      // One list for the group: counted once, not once per worker.
      assert.equal(await metric(group.files.adminUrl, 'portaria_revocation_entries'), 1);
      assert.equal(
        await metric(group.files.adminUrl, 'portaria_revocations_total{kind="token"}'),
        1,
      );
    });
  }

  test('a client revocation reaches every worker, and a worker started later loads it', async (t) => {
    const upstream = await startUpstream(t);
    const group = await startGroup(t, 2, {
      upstream: { default: { upstream: upstream.url } },
      revocation: { store: 'local', file: 'revocations.log' },
    });
    const token = await accessToken(group, 'other');
    assert.deepEqual(new Set(await protectedRequests(group, token, 10)), new Set([200]));
    const revoked = await revoke(group, { clientId: 'other' });
    assert.equal(revoked.status, 201, revoked.body);
    assert.deepEqual(new Set(await protectedRequests(group, token, 20)), new Set([401]));

    // A replacement worker takes the list from the primary before it listens.
    const [first] = group.workerPids();
    assert.ok(first !== undefined);
    process.kill(first, 'SIGKILL');
    const { waitForLines } = await import('./groupGateway.js');
    await waitForLines(group, 'a third worker started', (l) => l.msg === 'worker started', 3);
    const { waitForStatus } = await import('../helpers/process.js');
    await waitForStatus(`${group.files.adminUrl}/readyz`, 200, 60_000);
    assert.deepEqual(new Set(await protectedRequests(group, token, 20)), new Set([401]));
  });
});
