/**
 * A group (`server.workers` > 1) with `tokenLimits.store: local`: the address bucket, the
 * client buckets (a family named by each worker, resolved by the primary) and the
 * failed-secret back-off count the requests every worker answered, in the primary's one
 * limiter, not per worker (which would let N times as many through).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { metric } from '../helpers/metrics.js';
import { type Answer, startGroup, startUpstream, tokenFor } from './groupGateway.js';

const WORKERS = 3;
const OFF = { enabled: false };

/** `count` token requests, `concurrency` at a time, each on a connection of its own. */
async function tokenRequests(
  run: () => Promise<Answer>,
  count: number,
  concurrency: number,
): Promise<Answer[]> {
  const answers: Answer[] = [];
  let next = 0;
  const lane = async () => {
    while (next++ < count) answers.push(await run());
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return answers;
}

function statusCounts(answers: readonly Answer[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
}

describe('token limits in a group of workers', () => {
  test('the address bucket is one for the group: its burst is granted once, whichever worker answers', async (t) => {
    const upstream = await startUpstream(t);
    const burst = 10;
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
      tokenLimits: {
        store: 'local',
        perAddress: { enabled: true, ratePerSecond: 0.001, burst },
        perClient: OFF,
        failedSecretBackoff: OFF,
      },
    });
    const answers = await tokenRequests(() => tokenFor(group), 3 * burst, 6);
    assert.deepEqual(statusCounts(answers), { 200: burst, 429: 2 * burst });
    assert.equal(
      await metric(group.files.adminUrl, 'portaria_token_limit_refusals_total{reason="address"}'),
      2 * burst,
    );
  });

  test("the client's buckets are one for the group, its known pair's apart from the others'", async (t) => {
    const upstream = await startUpstream(t);
    const burst = 4;
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
      tokenLimits: {
        store: 'local',
        perAddress: OFF,
        perClient: { enabled: true, ratePerSecond: 0.001, burst },
        failedSecretBackoff: OFF,
      },
    });
    // One after the other: the first token comes from the bucket for unknown pairs and
    // makes the pair known; the next `burst` from the known pair's bucket, then 429. Each
    // worker counting alone, or one bucket for both, would answer more or fewer.
    const answers = await tokenRequests(() => tokenFor(group), 3 * burst, 1);
    assert.deepEqual(
      answers.map((a) => a.status),
      [...Array(1 + burst).fill(200), ...Array(2 * burst - 1).fill(429)],
    );
    assert.equal(
      await metric(group.files.adminUrl, 'portaria_token_limit_refusals_total{reason="client"}'),
      2 * burst - 1,
    );
    assert.equal((await tokenFor(group, 'other')).status, 200, 'another client has its own');
  });

  test('failed secrets back off across workers: the free failures are counted once for the group', async (t) => {
    const upstream = await startUpstream(t);
    const freeFailures = 4;
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
      tokenLimits: {
        store: 'local',
        perAddress: OFF,
        perClient: OFF,
        failedSecretBackoff: {
          enabled: true,
          freeFailures,
          baseDelayMs: 600_000,
          maxDelayMs: 600_000,
        },
      },
    });
    // One after the other: each failure is recorded before the next attempt starts. The
    // free failures and the one that starts the wait are answered 401; then 429. Counted
    // per worker, 3 × 5 attempts would have been answered.
    const wrong = await tokenRequests(() => tokenFor(group, 'acme', 'not-the-secret'), 12, 1);
    const answered = freeFailures + 1;
    assert.deepEqual(
      wrong.map((a) => a.status),
      [...Array(answered).fill(401), ...Array(12 - answered).fill(429)],
    );
    // The pair waits on every worker, even with the right secret.
    const right = await tokenRequests(() => tokenFor(group), 6, 3);
    assert.deepEqual(statusCounts(right), { 429: 6 });
    // Another client from the same address is not held back.
    assert.equal((await tokenFor(group, 'other')).status, 200);
  });
});
