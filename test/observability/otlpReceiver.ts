/**
 * A real OTLP/HTTP trace receiver on 127.0.0.1 port 0: takes what the exporter POSTs to
 * `/v1/traces` (OTLP JSON: ids in hex, attributes as typed `AnyValue`s), decodes every
 * span and keeps the raw bodies (for the redaction test). Torn down in `t.after`.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { TestContext } from 'node:test';
import { waitFor } from '../helpers/wait.js';

/** OTLP `Span.SpanKind`. */
export const KIND = { internal: 1, server: 2, client: 3 } as const;
/** OTLP `Status.StatusCode`. */
export const STATUS_ERROR = 2;

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  readonly statusCode: number;
  /** Start and end, nanoseconds since the epoch. */
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly resource: Readonly<Record<string, string | number | boolean>>;
}

export interface OtlpReceiver {
  /** The base URL, for `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Every request body as received. */
  readonly bodies: string[];
  /** Paths and content types of the export requests. */
  readonly requests: { path: string; contentType: string }[];
  /** Waits for a span `match` accepts. */
  span(what: string, match: (span: ReceivedSpan) => boolean): Promise<ReceivedSpan>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface ExportRequest {
  resourceSpans: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans: {
      spans: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: KeyValue[];
        status?: { code?: number };
        startTimeUnixNano: string | number;
        endTimeUnixNano: string | number;
      }[];
    }[];
  }[];
}

function decodeValue(value: AnyValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  throw new Error(`unexpected attribute value ${JSON.stringify(value)}`);
}

function attributesOf(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) out[key] = decodeValue(value);
  return out;
}

export async function startOtlpReceiver(t: TestContext): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const requests: { path: string; contentType: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      bodies.push(body);
      requests.push({ path: req.url ?? '', contentType: req.headers['content-type'] ?? '' });
      const decoded = JSON.parse(body) as ExportRequest;
      for (const rs of decoded.resourceSpans) {
        const resource = attributesOf(rs.resource?.attributes);
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              kind: s.kind,
              attributes: attributesOf(s.attributes),
              statusCode: s.status?.code ?? 0,
              startNs: BigInt(s.startTimeUnixNano),
              endNs: BigInt(s.endTimeUnixNano),
              resource,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    requests,
    span: (what, match) => waitFor(what, () => spans.find(match), 10_000, 20),
  };
}

/** Sets `OTEL_*` variables while `start` runs (the SDK reads them once, then). */
export async function withEnv<T>(env: Record<string, string>, start: () => Promise<T>): Promise<T> {
  const saved = new Map(Object.keys(env).map((name) => [name, process.env[name]]));
  Object.assign(process.env, env);
  try {
    return await start();
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}
