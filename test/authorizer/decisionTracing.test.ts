/**
 * A decision's span, exported to a real OTLP receiver: it continues the original request's
 * trace (the `traceparent` the proxy passes on) and is the original request's — its method,
 * path and route — with the decision's status.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startGateway } from '../helpers/fixture.js';
import { KIND, startOtlpReceiver, withEnv } from '../observability/otlpReceiver.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

describe('decision tracing', () => {
  test("the span continues the caller's trace and names the original request", async (t) => {
    const receiver = await startOtlpReceiver(t);
    const gw = await withEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50' },
      () =>
        startGateway(t, {
          settings: () => ({
            mode: 'authorizer',
            tracing: { enabled: true },
            server: { trustedProxies: ['127.0.0.1'] },
            authorizer: { host: '127.0.0.1', port: 0, grpc: { enabled: false } },
            upstream: { default: null },
            routes: [{ id: 'orders', prefix: '/v1/orders', scopes: ['orders:read'] }],
          }),
        }),
    );
    const token = await gw.token();
    const res = await fetch(`${gw.authorizerUrl}/traefik`, {
      headers: {
        authorization: `Bearer ${token}`,
        traceparent: `00-${TRACE}-${PARENT}-01`,
        'x-forwarded-method': 'POST',
        'x-forwarded-uri': '/v1/orders/9?x=1',
      },
    });
    assert.equal(res.status, 200);
    const span = await receiver.span(
      'the decision span',
      (s) => s.kind === KIND.server && s.attributes['portaria.route.id'] === 'orders',
    );
    assert.equal(span.traceId, TRACE);
    assert.equal(span.parentSpanId, PARENT);
    assert.equal(span.name, 'POST orders');
    assert.equal(span.attributes['url.path'], '/v1/orders/9');
    assert.equal(span.attributes['http.response.status_code'], 200);
  });
});
