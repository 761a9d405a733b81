/**
 * A group (`server.workers` > 1) with DPoP server nonces and no secret file: the primary
 * hands every worker one random secret, so a nonce one worker gave is one every other
 * worker accepts (else a client would be told `use_dpop_nonce` on every other connection).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { send, startGroup, startUpstream } from './groupGateway.js';

const WORKERS = 2;
const LIFETIME_SECONDS = 3600;

describe('DPoP nonces in a group of workers', () => {
  test('every worker hands out the same nonce (one group secret), and none leaks it in its environment log', async (t) => {
    const upstream = await startUpstream(t);
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
      dpop: { enabled: true, nonces: { enabled: true, lifetimeSeconds: LIFETIME_SECONDS } },
    });
    const slot = () => Math.floor(Date.now() / 1000 / LIFETIME_SECONDS);
    // Fresh connections until every worker answered one (the kernel picks the worker), at most 60;
    // again from the start if a slot boundary fell in between (the nonce then changes by design).
    for (let attempt = 0; attempt < 2; attempt++) {
      const startSlot = slot();
      const nonceByWorker = new Map<unknown, Set<string>>();
      for (let i = 0; i < 60 && nonceByWorker.size < WORKERS; i++) {
        const answer = await send(`${group.files.publicUrl}/v1/orders/${i}`);
        assert.equal(answer.status, 401);
        const nonce = answer.headers['dpop-nonce'];
        assert.equal(typeof nonce, 'string');
        const id = answer.headers['x-request-id'];
        const line = await waitForLine(group, id as string);
        const set = nonceByWorker.get(line.worker) ?? new Set<string>();
        set.add(nonce as string);
        nonceByWorker.set(line.worker, set);
      }
      if (slot() !== startSlot) continue;
      assert.equal(nonceByWorker.size, WORKERS, 'every worker answered');
      const all = new Set([...nonceByWorker.values()].flatMap((s) => [...s]));
      assert.equal(all.size, 1, `one nonce across the group, got ${[...all].join(' ')}`);
      assert.ok(!group.stdout().includes('_PORTARIA_GROUP_DPOP_NONCE_SECRET'));
      return;
    }
    assert.fail('two slot boundaries in one test');
  });
});

async function waitForLine(
  group: Awaited<ReturnType<typeof startGroup>>,
  requestId: string,
): Promise<Record<string, unknown>> {
  for (let i = 0; i < 200; i++) {
    const line = group.lines().find((l) => l['portaria.request_id'] === requestId);
    if (line !== undefined) return line;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no access line for ${requestId}`);
}
