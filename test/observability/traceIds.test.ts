/**
 * The ids and root sampling decisions drawn before the SDK (`traceIds.ts`): W3C Trace
 * Context's format, never an all-zero id, and for every trace the same decision the SDK's
 * own `TraceIdRatioBasedSampler` reaches on its trace id.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ROOT_CONTEXT, SamplingDecision } from '@opentelemetry/api';
import { TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { sampledTrace, TraceIds } from '../../src/observability/traceIds.js';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;

function boundOf(ratio: number): number {
  return Math.floor(ratio * 0xffffffff);
}

describe('trace ids', () => {
  test('a new trace is a version-00 traceparent with non-zero ids, and no two repeat', () => {
    const ids = new TraceIds(0x1_0000_0000);
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const traceparent = ids.newTrace();
      const [, traceId, spanId] = TRACEPARENT.exec(traceparent) ?? [];
      assert.ok(traceId !== undefined && spanId !== undefined, traceparent);
      assert.notEqual(traceId, '0'.repeat(32));
      assert.notEqual(spanId, '0'.repeat(16));
      seen.add(traceId);
    }
    assert.equal(seen.size, 1000);
  });

  test('span ids are 16 hex digits, never all zero, and do not repeat', () => {
    const ids = new TraceIds(0);
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const id = ids.spanId();
      assert.match(id, /^[0-9a-f]{16}$/);
      assert.notEqual(id, '0'.repeat(16));
      seen.add(id);
    }
    assert.equal(seen.size, 1000);
  });

  for (const ratio of [0.01, 0.25, 0.5, 0.9]) {
    test(`ratio ${ratio}: every trace is decided as TraceIdRatioBasedSampler decides its id`, () => {
      const ids = new TraceIds(boundOf(ratio));
      const sdk = new TraceIdRatioBasedSampler(ratio);
      let sampled = 0;
      const draws = 4000;
      for (let i = 0; i < draws; i++) {
        const traceparent = ids.newTrace();
        const traceId = traceparent.slice(3, 35);
        const { decision } = sdk.shouldSample(ROOT_CONTEXT, traceId);
        const expected = decision === SamplingDecision.RECORD_AND_SAMPLED;
        assert.equal(sampledTrace(traceparent), expected, traceparent);
        assert.equal(traceparent.endsWith(expected ? '-01' : '-00'), true);
        if (expected) sampled++;
      }
      // Loose: the share follows the ratio (binomial, far beyond 6 standard deviations otherwise).
      const sd = Math.sqrt(draws * ratio * (1 - ratio));
      assert.ok(Math.abs(sampled - draws * ratio) < 6 * sd + 1, `${sampled} of ${draws}`);
    });
  }

  test('bound 0 never samples, 2^32 always does', () => {
    const never = new TraceIds(0);
    const always = new TraceIds(0x1_0000_0000);
    for (let i = 0; i < 500; i++) {
      assert.equal(sampledTrace(never.newTrace()), false);
      assert.equal(sampledTrace(always.newTrace()), true);
    }
  });
});
