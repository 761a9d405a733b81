/**
 * The access line's schema: OpenTelemetry names, every variable field bounded as written,
 * values written as data (a client cannot end a field or a line), and every line under
 * the 4 KiB a pipe writes atomically — on the hand-written hot path and on the lines pino
 * writes (upgrades, failed requests with their exception).
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import {
  ACCESS_BOUNDS,
  ACCESS_LINE_MAX_BYTES,
  accessFieldsObject,
  boundedText,
  fittingLength,
  pathOf,
} from '../../src/observability/accessLine.js';
import { createLoggers } from '../../src/observability/logger.js';
import { accessRecord } from '../helpers/accessRecord.js';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(line);
      callback();
    },
  });
  // Bound as a worker of a group writes them: `worker` takes room in every line.
  const worker = Number.MAX_SAFE_INTEGER;
  return { lines, destination, ...createLoggers('info', destination, { worker }) };
}

/** Room the trace context fields (`trace_id`, `span_id`, `trace_flags`) take in a line. */
const TRACE_CONTEXT_BYTES = 100;

/** Every variable field at its worst: long, escaping-heavy, multi-byte, lone surrogates. */
const WORST = '\u0001"\\é€😀\ud800\u0085\u2028'.repeat(2000);
const worstRecord = accessRecord({
  id: 'x'.repeat(128),
  method: 'M'.repeat(40),
  routeId: 'r'.repeat(63),
  urlPath: `/${WORST}`,
  status: 599,
  durationMs: 123456789.123,
  peerAddress: WORST,
  clientAddress: WORST,
  userAgent: WORST,
  requestBytes: Number.MAX_SAFE_INTEGER,
  responseBytes: Number.MAX_SAFE_INTEGER,
  upstreamMs: 123456789.123456,
  clientId: WORST,
  certificateSha256: 'f'.repeat(64),
  certificateVerdict: 'not-yet-valid',
  reason: 'upstream-timeout',
  interactionId: '0'.repeat(36),
  decision: 'envoy-grpc',
  secondAsk: true,
  quota: { policy: { name: 'q'.repeat(63) }, outcome: 'unavailable-closed' },
});

describe('bounds', () => {
  test('a hand-written request line with every field at its worst stays under 4 KiB', () => {
    const { lines, access } = capture();
    access.request(worstRecord);
    access.flush();
    const [line = ''] = lines;
    const bytes = Buffer.byteLength(line) + 1;
    assert.ok(bytes + TRACE_CONTEXT_BYTES <= ACCESS_LINE_MAX_BYTES, `${bytes} bytes`);
    const parsed = JSON.parse(line) as Record<string, unknown>;
    assert.deepEqual(parsed['portaria.truncated'], [
      'http.request.method',
      'url.path',
      'network.peer.address',
      'client.address',
      'user_agent.original',
      'portaria.client_id',
    ]);
    assert.ok((parsed['url.path'] as string).startsWith('/\u0001"\\é€😀\ud800\u0085\u2028'));
  });

  test('a failed request line (pino) with its exception at its worst stays under 4 KiB', () => {
    const { lines, logger } = capture();
    const error = new Error(WORST);
    error.stack = WORST;
    logger.error(accessFieldsObject(worstRecord, error), 'request failed');
    const [line = ''] = lines;
    const bytes = Buffer.byteLength(line) + 1;
    assert.ok(bytes + TRACE_CONTEXT_BYTES <= ACCESS_LINE_MAX_BYTES, `${bytes} bytes`);
    const parsed = JSON.parse(line) as Record<string, unknown>;
    assert.equal(parsed['exception.type'], 'Error');
    assert.deepEqual(parsed['portaria.truncated'], [
      'http.request.method',
      'url.path',
      'network.peer.address',
      'client.address',
      'user_agent.original',
      'portaria.client_id',
      'exception.message',
      'exception.stacktrace',
    ]);
  });

  test('a value that fits is written whole and not marked', () => {
    const { lines, access } = capture();
    const path = `/${'a'.repeat(ACCESS_BOUNDS.urlPath - 1)}`;
    const agent = 'é'.repeat(ACCESS_BOUNDS.userAgent / 2);
    access.request(accessRecord({ urlPath: path, userAgent: agent }));
    access.flush();
    const parsed = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    assert.equal(parsed['url.path'], path);
    assert.equal(parsed['user_agent.original'], agent);
    assert.equal(parsed['portaria.truncated'], undefined);
  });

  test('a path one byte over its bound is cut to the bound and marked', () => {
    const { lines, access } = capture();
    access.request(accessRecord({ urlPath: `/${'a'.repeat(ACCESS_BOUNDS.urlPath)}` }));
    access.flush();
    const parsed = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    assert.equal((parsed['url.path'] as string).length, ACCESS_BOUNDS.urlPath);
    assert.deepEqual(parsed['portaria.truncated'], ['url.path']);
  });

  test('fittingLength counts escaped UTF-8 bytes and never splits a surrogate pair', () => {
    assert.equal(fittingLength('abc', 3), 3);
    assert.equal(fittingLength('abc', 2), 2);
    assert.equal(fittingLength('"a', 2), 1, 'a quote takes two bytes');
    assert.equal(fittingLength('\u0001a', 6), 1, 'a control character takes six');
    assert.equal(fittingLength('\na', 3), 2, 'a newline takes two');
    assert.equal(fittingLength('€a', 3), 1, 'three-byte character');
    assert.equal(fittingLength('😀a', 3), 0, 'a pair is kept whole or left out');
    assert.equal(fittingLength('😀a', 4), 2);
    assert.equal(fittingLength('\ud800a', 6), 1, 'a lone surrogate is escaped: six');
    assert.equal(fittingLength('\u007fa', 6), 1, 'DEL is escaped: six');
    assert.equal(fittingLength('\u0085a', 6), 1, 'a C1 control is escaped: six');
    assert.equal(fittingLength('\u009ba', 7), 2);
    assert.equal(fittingLength('\u2028\u2029', 11), 1, 'a line separator is escaped: six');
    assert.equal(fittingLength('\u00a0a', 3), 2, 'U+00A0 is not a control: two');
    assert.equal(boundedText('é'.repeat(10), 5), 'éé');
  });
});

/** Not C0, DEL, C1, U+2028 or U+2029: what a log line may hold unescaped. */
function isSafeRaw(c: string): boolean {
  const u = c.charCodeAt(0);
  return u >= 0x20 && (u < 0x7f || u > 0x9f) && u !== 0x2028 && u !== 0x2029;
}

describe('values are data', () => {
  const forgeries: [string, string][] = [
    ['a quote closing the field', 'curl","http.response.status_code":200,"x":"'],
    ['a newline starting another line', 'curl\n{"level":"info","msg":"request"}'],
    ['a carriage return and other controls', 'curl\r\u0000\u001b[31m\u007f'],
    ['a backslash escaping the closing quote', 'curl\\'],
    ['a lone surrogate', 'curl\ud800'],
    ['U+2028 line separator', 'curl\u2028x'],
    ['U+2029 paragraph separator', 'curl\u2029x'],
    ['NEL (U+0085), a line end for Unicode-aware readers', 'curl\u0085{"level":"fatal"}'],
    ['CSI (U+009B), a terminal control sequence', 'curl\u009b2J\u009b31m'],
    [
      'every C1 control',
      Array.from({ length: 33 }, (_, i) => String.fromCharCode(0x7f + i)).join(''),
    ],
  ];
  for (const [what, value] of forgeries) {
    test(`a user agent or path with ${what} comes back as written`, () => {
      const { lines, access, logger } = capture();
      const record = accessRecord({ userAgent: value, urlPath: `/${value}` });
      access.request(record);
      access.flush();
      logger.warn(accessFieldsObject(record), 'request failed');
      assert.equal(lines.length, 2, 'one line each');
      for (const line of lines) {
        assert.ok([...line].every(isSafeRaw), 'no raw control or line separator');
        const parsed = JSON.parse(line) as Record<string, unknown>;
        assert.equal(parsed['http.response.status_code'], 200);
        assert.equal(parsed['user_agent.original'], value);
        assert.equal(parsed['url.path'], `/${value}`);
      }
    });
  }
});

test('pathOf drops the query and the fragment', () => {
  assert.equal(pathOf('/v1/orders?access_token=abc'), '/v1/orders');
  assert.equal(pathOf('/v1/orders#x?y'), '/v1/orders');
  assert.equal(pathOf('/v1/orders'), '/v1/orders');
  assert.equal(pathOf(undefined), '');
});
