/**
 * One request's trace (`requestTrace.ts`) driven directly, its finished span records
 * collected where the export thread would take them: what a recorded and an unrecorded
 * request hand on, and that a span ended twice is handed on once (as the SDK ignores a
 * second `Span.end`).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type RequestStart,
  RequestTrace,
  type TraceRoot,
} from '../../src/observability/requestTrace.js';
import type { SpanRecord } from '../../src/observability/spanRecord.js';
import { TraceIds } from '../../src/observability/traceIds.js';

const START: RequestStart = {
  path: '/v1/orders/1',
  clientAddress: '127.0.0.1',
  serverAddress: '127.0.0.1',
  serverPort: 8080,
  protocolVersion: '1.1',
};

function rootWith(bound: number): { root: TraceRoot; finished: SpanRecord[] } {
  const finished: SpanRecord[] = [];
  const root: TraceRoot = {
    ids: new TraceIds(bound),
    slot: { verifying: null },
    caller: () => null, // no request below sends a traceparent
    finish: (record) => finished.push(record),
  };
  return { root, finished };
}

describe('a request trace', () => {
  test('recorded: each span is handed on once, however often it is ended', () => {
    const { root, finished } = rootWith(0x1_0000_0000);
    const trace = new RequestTrace(root, 'GET', {}, () => START);
    assert.equal(trace.recording, true);
    const principal = trace.verify(() => ({ issuerId: 'self' }));
    assert.deepEqual(principal, { issuerId: 'self' });
    const call = trace.upstream('GET', 'http://127.0.0.1:9000', '/v1/orders/1', 'orders');
    call.end(200, undefined);
    call.end(0, 'reset'); // a late failure after the end: ignored
    trace.end(200, 'orders', undefined, 'client-1');
    trace.end(499, 'orders', undefined, 'client-1');

    assert.deepEqual(
      finished.map((r) => r.name),
      ['portaria.verify_token', 'GET', 'GET orders'],
    );
    const [verify, upstream, server] = finished as [SpanRecord, SpanRecord, SpanRecord];
    assert.equal(server.attributes['http.response.status_code'], 200, 'the first end counts');
    assert.equal(upstream.error, false);
    assert.equal(upstream.attributes['error.type'], undefined);
    for (const child of [verify, upstream]) {
      assert.equal(child.parentSpanId, server.spanId);
      assert.equal(child.traceId, trace.traceId);
    }
    assert.equal(server.spanId, trace.spanId);
    assert.equal(call.traceparent, `00-${trace.traceId}-${upstream.spanId}-01`);
  });

  test('unrecorded: nothing is handed on; the upstream gets the decision with the sampled flag off', () => {
    const { root, finished } = rootWith(0);
    const trace = new RequestTrace(root, 'GET', {}, () => {
      throw new Error('an unrecorded request is not described');
    });
    assert.equal(trace.recording, false);
    assert.equal(trace.logged, false);
    trace.verify(() => ({ issuerId: 'self' }));
    const call = trace.upstream('GET', 'http://127.0.0.1:9000', '/', 'orders');
    assert.equal(call.traceparent, `00-${trace.traceId}-${trace.spanId}-00`);
    call.end(200, undefined);
    trace.step('sign')();
    trace.end(200, 'orders', undefined, undefined);
    assert.deepEqual(finished, []);
  });
});
