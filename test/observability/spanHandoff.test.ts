/**
 * The export thread (`spanHandoff.ts` → `traceExportWorker.ts` → the SDK): span records
 * finished on the serving thread reach a real OTLP/HTTP receiver as the SDK's spans, with
 * the records' ids, parents, kinds, attributes, status and times; the drain exports what
 * still waits; after it nothing is taken.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startRecord } from '../../src/observability/requestTrace.js';
import { createSpanHandoff } from '../../src/observability/spanHandoff.js';
import { SPAN_KIND } from '../../src/observability/spanRecord.js';
import { KIND, STATUS_ERROR, startOtlpReceiver, withEnv } from './otlpReceiver.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

/** Within 1 µs: an epoch time in ms carries ~0.2 µs of precision. */
function sameTime(ns: bigint, ms: number): boolean {
  const diff = ns - BigInt(Math.round(ms * 1e6));
  return diff < 1000n && diff > -1000n;
}

describe('span handoff to the export thread', () => {
  test('records become the SDK spans they describe; the drain exports what waits', async (t) => {
    const receiver = await startOtlpReceiver(t);
    const handoff = await withEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '600000' },
      async () => createSpanHandoff(),
    );
    const server = startRecord(
      'GET orders',
      SPAN_KIND.server,
      TRACE,
      'a1a1a1a1a1a1a1a1',
      CALLER_SPAN,
      true,
      'vendor=abc',
    );
    server.attributes['http.response.status_code'] = 503;
    server.attributes['portaria.route.id'] = 'orders';
    server.error = true;
    const child = startRecord(
      'portaria.verify_token',
      SPAN_KIND.internal,
      TRACE,
      'b2b2b2b2b2b2b2b2',
      server.spanId,
      false,
      'vendor=abc',
    );
    child.attributes['portaria.token.cache_hit'] = true;
    child.end = child.start + 0.25;
    server.end = server.start + 1.5;
    handoff.finish(child);
    handoff.finish(server);
    await handoff.shutdown(5000);

    assert.equal(receiver.spans.length, 2, 'both exported by the drain, not by a timer');
    const [exportedServer, exportedChild] = ['a1a1a1a1a1a1a1a1', 'b2b2b2b2b2b2b2b2'].map((id) =>
      receiver.spans.find((s) => s.spanId === id),
    );
    assert.ok(exportedServer !== undefined && exportedChild !== undefined);
    assert.deepEqual(
      {
        traceId: exportedServer.traceId,
        parent: exportedServer.parentSpanId,
        name: exportedServer.name,
        kind: exportedServer.kind,
        status: exportedServer.statusCode,
        attributes: exportedServer.attributes,
        service: exportedServer.resource['service.name'],
      },
      {
        traceId: TRACE,
        parent: CALLER_SPAN,
        name: 'GET orders',
        kind: KIND.server,
        status: STATUS_ERROR,
        attributes: { 'http.response.status_code': 503, 'portaria.route.id': 'orders' },
        service: 'portaria',
      },
    );
    assert.deepEqual(
      {
        traceId: exportedChild.traceId,
        parent: exportedChild.parentSpanId,
        kind: exportedChild.kind,
        status: exportedChild.statusCode,
        attributes: exportedChild.attributes,
      },
      {
        traceId: TRACE,
        parent: 'a1a1a1a1a1a1a1a1',
        kind: KIND.internal,
        status: 0,
        attributes: { 'portaria.token.cache_hit': true },
      },
    );
    assert.ok(sameTime(exportedServer.startNs, server.start), 'start as recorded');
    assert.ok(sameTime(exportedServer.endNs, server.end), 'end as recorded');
    assert.ok(sameTime(exportedChild.endNs, child.end));
    assert.match(receiver.bodies.join(''), /"traceState":"vendor=abc"/, 'the caller tracestate');
  });

  test('a finished span is exported without a drain, by the thread and the batch delay', async (t) => {
    const receiver = await startOtlpReceiver(t);
    const handoff = await withEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50' },
      async () => createSpanHandoff(),
    );
    t.after(() => handoff.shutdown(1000));
    const root = startRecord(
      'portaria.jwks.fetch',
      SPAN_KIND.client,
      TRACE,
      'c3c3c3c3c3c3c3c3',
      undefined,
      false,
      undefined,
    );
    root.end = root.start + 2;
    handoff.finish(root);
    const exported = await receiver.span('the root span', (s) => s.spanId === root.spanId);
    assert.equal(exported.parentSpanId, '');
    assert.equal(exported.kind, KIND.client);
  });

  test('spans beyond the bound of those waiting are dropped, and the drop is reported once', async (t) => {
    const receiver = await startOtlpReceiver(t);
    const reports: string[] = [];
    const handoff = await withEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '600000' },
      async () => createSpanHandoff((message) => reports.push(message), 300),
    );
    // One synchronous burst: the thread's receipts cannot arrive before it ends, so 256
    // are posted, 44 wait here, and the 700 after them find the bound reached.
    for (let i = 0; i < 1000; i++) {
      const record = startRecord(
        'burst',
        SPAN_KIND.internal,
        TRACE,
        (i + 1).toString(16).padStart(16, '0'),
        undefined,
        false,
        undefined,
      );
      record.end = record.start + 1;
      handoff.finish(record);
    }
    await handoff.shutdown(5000);
    assert.equal(receiver.spans.length, 300);
    assert.deepEqual(reports, ['spans dropped: the export thread is behind (1 so far)']);
  });

  test('the thread starts with the first span: a handoff that gets none has no thread, and its drain ends at once', async (t) => {
    const receiver = await startOtlpReceiver(t);
    const threads = () => readdirSync('/proc/self/task').length;
    const before = threads();
    const idle = await withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, async () =>
      createSpanHandoff(),
    );
    const used = await withEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50' },
      async () => createSpanHandoff(),
    );
    await sleep(300);
    assert.equal(threads(), before, 'no thread before any span');
    await idle.shutdown(5000);

    // Started after withEnv restored the variables: the thread still reads them as they were.
    const record = startRecord(
      'first',
      SPAN_KIND.internal,
      TRACE,
      'e5e5e5e5e5e5e5e5',
      undefined,
      false,
      undefined,
    );
    record.end = record.start + 1;
    used.finish(record);
    await receiver.span('the first span', (s) => s.spanId === record.spanId);
    assert.ok(threads() > before, 'the thread runs');
    await used.shutdown(5000);
  });

  test('after the drain a finished span is ignored, and a second drain is the first', async (t) => {
    const receiver = await startOtlpReceiver(t);
    const handoff = await withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, async () =>
      createSpanHandoff(),
    );
    const first = handoff.shutdown(1000);
    assert.equal(handoff.shutdown(1000), first);
    await first;
    const late = startRecord(
      'late',
      SPAN_KIND.internal,
      TRACE,
      'd4d4d4d4d4d4d4d4',
      undefined,
      false,
      undefined,
    );
    late.end = late.start + 1;
    handoff.finish(late);
    assert.equal(receiver.spans.length, 0);
  });
});
