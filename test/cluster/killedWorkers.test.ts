/**
 * Workers killed (SIGKILL) while new connections keep arriving: every request gets an
 * answer or sees its connection close, and the primary is left holding no connection of
 * the public port (a connection handed to a worker that died before taking it must not
 * stay open in the primary, in CLOSE_WAIT once the client gives up).
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, test } from 'node:test';
import { waitForStatus } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import {
  accessToken,
  alive,
  type Group,
  jtiOf,
  revoke,
  startGroup,
  startUpstream,
  waitForLines,
} from './groupGateway.js';
import { tcpSocketsOf } from './processSockets.js';

const WORKERS = 2;
const ROUNDS = 4;
const LANES = 8;
/**
 * A request with neither an answer nor a close by then is hung: each is answered in ms,
 * or waits for a stopped worker until the fan-out kills it (5 s).
 */
const HUNG_AFTER_MS = 20_000;
const MAX_REQUESTS = 20_000;

type Outcome = 'answered' | 'closed' | 'hung';

/** One GET on a connection of its own, classified. */
function outcomeOf(url: string, token: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = request(url, {
      headers: { authorization: `Bearer ${token}`, connection: 'close' },
      agent: false,
    });
    const timer = setTimeout(() => {
      resolve('hung');
      req.destroy();
    }, HUNG_AFTER_MS);
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => {
        clearTimeout(timer);
        resolve('answered');
      });
      res.on('error', () => {
        clearTimeout(timer);
        resolve('closed');
      });
    });
    req.on('error', () => {
      clearTimeout(timer);
      resolve('closed');
    });
    req.end();
  });
}

/** Requests on new connections, `LANES` at a time, until `stop()` (or `MAX_REQUESTS`). */
function load(group: Group, token: string) {
  const counts: Record<Outcome, number> = { answered: 0, closed: 0, hung: 0 };
  let stopped = false;
  let sent = 0;
  const lane = async () => {
    while (!stopped && sent < MAX_REQUESTS) {
      sent++;
      counts[await outcomeOf(`${group.files.publicUrl}/v1/orders/${sent}`, token)]++;
    }
  };
  const lanes = Promise.all(Array.from({ length: LANES }, lane));
  return {
    counts,
    done: () => counts.answered + counts.closed + counts.hung,
    async stop() {
      stopped = true;
      await lanes;
      return counts;
    },
  };
}

describe('workers killed under load', () => {
  test('every request is answered or closed, and the primary holds no connection afterwards', async (t) => {
    const upstream = await startUpstream(t);
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
    });
    const primary = group.child.pid;
    assert.ok(primary !== undefined);
    const publicPort = group.files.publicPort;
    const token = await accessToken(group);
    const traffic = load(group, token);
    try {
      for (let round = 0; round < ROUNDS; round++) {
        await waitForStatus(`${group.files.adminUrl}/readyz`, 200, 60_000);
        const victim = group.workerPids().filter(alive).at(-1);
        assert.ok(victim !== undefined);
        // Killed while connections are being handed out, not before the load started.
        const before = traffic.done();
        await waitFor(
          'requests flowing',
          () => (traffic.done() >= before + 50 ? true : undefined),
          30_000,
        );
        process.kill(victim, 'SIGKILL');
        await waitFor('the victim gone', () => (alive(victim) ? undefined : true), 10_000);
      }
      await waitForStatus(`${group.files.adminUrl}/readyz`, 200, 60_000);
    } finally {
      await traffic.stop();
    }
    await assertNothingHung(traffic.counts, primary, publicPort);
  });

  test('a worker the revocation fan-out kills for not confirming: every request answered or closed, nothing left in the primary', async (t) => {
    const upstream = await startUpstream(t);
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
    });
    const primary = group.child.pid;
    assert.ok(primary !== undefined);
    const token = await accessToken(group);
    const unrelated = await accessToken(group, 'other');
    const traffic = load(group, token);
    let revoked: Awaited<ReturnType<typeof revoke>>;
    const victim = group.workerPids().at(-1);
    assert.ok(victim !== undefined);
    try {
      const before = traffic.done();
      await waitFor(
        'requests flowing',
        () => (traffic.done() >= before + 50 ? true : undefined),
        30_000,
      );
      // Stopped, it takes no connection and confirms no revocation: the primary kills it.
      process.kill(victim, 'SIGSTOP');
      revoked = await revoke(group, { jti: jtiOf(unrelated) });
      await waitFor('the victim gone', () => (alive(victim) ? undefined : true), 10_000);
      await waitForStatus(`${group.files.adminUrl}/readyz`, 200, 60_000);
    } finally {
      await traffic.stop();
    }
    assert.equal(revoked.status, 201, revoked.body);
    const [exit] = await waitForLines(
      group,
      'the kill logged',
      (l) => l.msg === 'worker exited unexpectedly: starting a replacement',
      1,
    );
    assert.deepEqual([exit?.pid, exit?.signal], [victim, 'SIGKILL']);
    await assertNothingHung(traffic.counts, primary, group.files.publicPort);
  });
});

/** No request hung, and the primary holds no connection of the public port. */
async function assertNothingHung(
  counts: Record<Outcome, number>,
  primary: number,
  publicPort: number,
): Promise<void> {
  assert.ok(counts.answered > 0);
  const leftInPrimary = () =>
    tcpSocketsOf(primary).filter(
      (s) => (s.localPort === publicPort && s.state !== 'LISTEN') || s.state === 'CLOSE_WAIT',
    );
  const left = await waitFor(
    'the primary holding no public connection',
    () => (leftInPrimary().length === 0 ? [] : undefined),
    5000,
    100,
  ).catch(() => leftInPrimary());
  assert.deepEqual(
    { hung: counts.hung, leftInPrimary: left },
    { hung: 0, leftInPrimary: [] },
    JSON.stringify(counts),
  );
}
