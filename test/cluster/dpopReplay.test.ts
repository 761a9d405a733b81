/**
 * A group (`server.workers` > 1) with `oauth.replayStore: local`: a DPoP proof's `jti` is
 * single use across the group, in the primary's one replay store, not once per worker —
 * sent again on fresh connections (node:cluster hands each to the next worker) and sent
 * many times at once.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { dpopBoundToken, dpopKeys, dpopProof } from '../helpers/dpopKeys.js';
import { SECRET, send, startGroup, startUpstream, waitForLines } from './groupGateway.js';

const WORKERS = 2;

describe('DPoP proofs in a group of workers', () => {
  test('one proof passes once in the group: again on both workers, and eight copies at once', async (t) => {
    const upstream = await startUpstream(t);
    const group = await startGroup(t, WORKERS, {
      dpop: { enabled: true },
      oauth: { replayStore: 'local' },
      upstream: { default: { upstream: upstream.url } },
    });
    const keys = await dpopKeys();
    const base = group.files.publicUrl;
    const token = await dpopBoundToken(base, keys, 'acme', SECRET);
    const url = `${base}/v1/orders/1`;
    const proof = await dpopProof(keys, 'GET', url, { token });
    const resource = (sent: string) =>
      send(url, { headers: { authorization: `DPoP ${token}`, dpop: sent } });
    const ours = (l: Record<string, unknown>) =>
      l.msg === 'request' && l['url.path'] === '/v1/orders/1';
    const lines = () => group.lines().filter(ours);

    // Fresh connections until both workers have answered (the kernel picks), at most 40.
    const statuses: number[] = [];
    const answeredBy = () => new Set(lines().map((l) => l.worker));
    while (statuses.length < 6 || (answeredBy().size < WORKERS && statuses.length < 40)) {
      statuses.push((await resource(proof)).status);
      await waitForLines(group, 'the access line', ours, statuses.length);
    }
    assert.deepEqual(statuses, [200, ...statuses.slice(1).map(() => 401)]);
    assert.equal(answeredBy().size, WORKERS);
    const reasons = new Set(
      lines()
        .slice(1)
        .map((l) => l['portaria.reason']),
    );
    assert.deepEqual([...reasons], ['dpop-replayed']);

    const copies = await dpopProof(keys, 'GET', url, { token });
    const at = await Promise.all(Array.from({ length: 8 }, () => resource(copies)));
    assert.deepEqual(at.map((a) => a.status).sort(), [200, 401, 401, 401, 401, 401, 401, 401]);
  });
});
