/**
 * One JWKS download against a real server on 127.0.0.1 port 0: its deadline holds for a
 * server that never answers and for one that never finishes its body, through forced
 * garbage collections, and the caller's signal ends it at once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  downloadJwks,
  type JwksSource,
  messageOf,
  outcomeOf,
} from '../../src/issuers/jwksDownload.js';
import { forceGcEvery } from '../helpers/forcedGc.js';
import {
  ecKey,
  hang,
  jwksOf,
  serve,
  startJwksServer,
  trickle,
  within,
} from '../helpers/jwksServer.js';
import { waitFor } from '../helpers/wait.js';

const sourceOf = (uri: string, timeoutMs: number): JwksSource => ({
  issuerId: 'partner',
  uri,
  algorithms: ['ES256'],
  fetch: globalThis.fetch,
  log: undefined,
  timeoutMs,
});

/** The download's rejection (fails the test when it resolves or outlives `ms`). */
async function failureOf(download: Promise<unknown>, ms: number): Promise<unknown> {
  return within(
    download.then(
      () => assert.fail('the download succeeded'),
      (error: unknown) => error,
    ),
    ms,
    'the download to end',
  );
}

test('a key server that accepts and never answers is given up at the deadline, through forced garbage collections', async (t) => {
  forceGcEvery(t);
  const server = await startJwksServer(t, hang());
  const started = performance.now();
  const error = await failureOf(
    downloadJwks(sourceOf(server.url, 300), new AbortController().signal),
    5000,
  );
  const elapsed = performance.now() - started;
  assert.equal(outcomeOf(error), 'timeout');
  assert.equal(messageOf(error), 'no complete answer within 300 ms');
  assert.ok(elapsed >= 290 && elapsed < 3000, `given up after ${Math.round(elapsed)} ms`);
});

test('a key server that trickles its body forever is given up at the deadline and its connection closed', async (t) => {
  forceGcEvery(t);
  let closed = false;
  const server = await startJwksServer(
    t,
    trickle(100, () => {
      closed = true;
    }),
  );
  const started = performance.now();
  const error = await failureOf(
    downloadJwks(sourceOf(server.url, 500), new AbortController().signal),
    5000,
  );
  const elapsed = performance.now() - started;
  assert.equal(outcomeOf(error), 'timeout');
  assert.ok(elapsed >= 490 && elapsed < 3500, `given up after ${Math.round(elapsed)} ms`);
  await waitFor('the server to see the connection closed', () => (closed ? true : undefined), 5000);
});

test('the caller’s signal ends a hanging download at once, with its reason', async (t) => {
  const server = await startJwksServer(t, hang());
  const controller = new AbortController();
  const download = downloadJwks(sourceOf(server.url, 10_000), controller.signal);
  await waitFor('the request to arrive', () => (server.count() === 1 ? true : undefined));
  const started = performance.now();
  controller.abort(new Error('key set closed'));
  const error = await failureOf(download, 3000);
  assert.ok(performance.now() - started < 2000, 'long before the 10 s deadline');
  assert.equal(outcomeOf(error), 'error');
  assert.equal(messageOf(error), 'key set closed');
});

test('a signal aborted before the download starts sends no request', async (t) => {
  const server = await startJwksServer(t, serve(jwksOf(ecKey('k'))));
  const controller = new AbortController();
  controller.abort(new Error('key set closed'));
  const error = await failureOf(downloadJwks(sourceOf(server.url, 1000), controller.signal), 3000);
  assert.equal(messageOf(error), 'key set closed');
  assert.equal(server.count(), 0);
});

test('a download that completes in time returns the keys', async (t) => {
  forceGcEvery(t);
  const server = await startJwksServer(t, serve(jwksOf(ecKey('k'))));
  const keys = await downloadJwks(sourceOf(server.url, 1000), new AbortController().signal);
  assert.deepEqual([...keys.keys()], ['k']);
});

test('a fetch that ignores its signal still ends at the deadline', async () => {
  const source = {
    ...sourceOf('http://127.0.0.1:9/jwks', 200),
    fetch: () => new Promise<never>(() => {}),
  };
  const error = await failureOf(downloadJwks(source, new AbortController().signal), 5000);
  assert.equal(outcomeOf(error), 'timeout');
});

test('a body that never ends is cancelled at the deadline even when the fetch does not tie it to the signal', async () => {
  let cancelled: unknown;
  const body = new ReadableStream<Uint8Array>({
    start(stream) {
      stream.enqueue(new TextEncoder().encode('{"keys": ['));
    },
    pull: () => new Promise<void>(() => {}),
    cancel(reason) {
      cancelled = reason;
    },
  });
  const source = {
    ...sourceOf('http://127.0.0.1:9/jwks', 200),
    fetch: () => Promise.resolve(new Response(body, { status: 200 })),
  };
  const error = await failureOf(downloadJwks(source, new AbortController().signal), 5000);
  assert.equal(outcomeOf(error), 'timeout');
  await waitFor(
    'the body to be cancelled',
    () => (cancelled === undefined ? undefined : true),
    5000,
  );
  assert.equal(outcomeOf(cancelled), 'timeout', 'cancelled with the deadline as its reason');
});
