/** Access records for tests that drive the access logger directly. */
import type { AccessRecord } from '../../src/observability/accessLine.js';

/** A finished `GET /v1/orders/1` on route `orders`, with `fields` over it. */
export function accessRecord(fields: Partial<AccessRecord> = {}): AccessRecord {
  return {
    id: 'r',
    method: 'GET',
    routeId: 'orders',
    urlPath: '/v1/orders/1',
    status: 200,
    durationMs: 1,
    peerAddress: undefined,
    clientAddress: undefined,
    userAgent: undefined,
    requestBytes: 0,
    responseBytes: 0,
    upstreamMs: undefined,
    clientId: undefined,
    certificateSha256: undefined,
    certificateVerdict: undefined,
    reason: undefined,
    ...fields,
  };
}
