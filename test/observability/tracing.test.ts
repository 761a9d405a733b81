/**
 * OpenTelemetry tracing, end to end: a real gateway with `tracing.enabled`, the SDK
 * configured by `OTEL_*` variables, exporting to a real OTLP/HTTP receiver on loopback
 * whose decoded spans are asserted — structure (parents, kinds, names), attributes,
 * propagation as the upstream sees it, the access line's ids, and redaction.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeJwt, SignJWT } from 'jose';
import { WebSocket, WebSocketServer } from 'ws';
import { ManualClock } from '../../src/lib/clock.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type Gateway,
  type GatewayOptions,
  startGateway,
  TOKEN_PATH,
} from '../helpers/fixture.js';
import { ecKey, jwksOf, serve, startJwksServer } from '../helpers/jwksServer.js';
import { accessLineOf, waitFor } from '../helpers/wait.js';
import {
  KIND,
  type OtlpReceiver,
  type ReceivedSpan,
  STATUS_ERROR,
  startOtlpReceiver,
  withEnv,
} from './otlpReceiver.js';

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const CALLER_TRACEPARENT = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

async function tracedGateway(
  t: TestContext,
  options: GatewayOptions & { sampler?: string; enabled?: boolean } = {},
): Promise<{ gw: Gateway; receiver: OtlpReceiver }> {
  const receiver = await startOtlpReceiver(t);
  const { sampler = 'parentbased_always_on', enabled = true, settings, ...rest } = options;
  const gw = await withEnv(
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_SAMPLER: sampler,
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    },
    () =>
      startGateway(t, {
        ...rest,
        settings: (upstreamUrl) => ({ ...settings?.(upstreamUrl), tracing: { enabled } }),
      }),
  );
  return { gw, receiver };
}

function childrenOf(receiver: OtlpReceiver, parent: ReceivedSpan): ReceivedSpan[] {
  return receiver.spans.filter(
    (s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId,
  );
}

/** Waits for the server span whose route label is `route` and that `match` accepts. */
function serverSpan(
  receiver: OtlpReceiver,
  route: string,
  match: (span: ReceivedSpan) => boolean = () => true,
): Promise<ReceivedSpan> {
  return receiver.span(`the server span of route ${route}`, (s) => {
    return s.kind === KIND.server && s.attributes['portaria.route.id'] === route && match(s);
  });
}

const ROUTES = (upstream: string) => ({
  routes: [{ id: 'orders', prefix: '/v1/orders', upstream, scopes: ['orders:read'] }],
  upstream: { default: null },
});

describe('tracing', () => {
  test('a forwarded request: server span parented by the caller, verification (cache miss, then hit) and the upstream call as children, propagated upstream', async (t) => {
    const { gw, receiver } = await tracedGateway(t, { settings: ROUTES });
    const token = await gw.token();
    const send = () =>
      fetch(`${gw.url}/v1/orders/42?page=2`, {
        headers: {
          authorization: `Bearer ${token}`,
          traceparent: CALLER_TRACEPARENT,
          tracestate: 'vendor=abc',
          'x-request-id': `req-${gw.upstream.received.length}`,
        },
      });
    assert.equal((await send()).status, 200);
    assert.equal((await send()).status, 200);

    const servers = await waitFor(
      'both server spans',
      () => {
        const found = receiver.spans.filter(
          (s) => s.kind === KIND.server && s.attributes['portaria.route.id'] === 'orders',
        );
        return found.length === 2 ? found : undefined;
      },
      10_000,
    );
    for (const [index, server] of servers.entries()) {
      assert.equal(server.traceId, CALLER_TRACE, 'the caller trace continues');
      assert.equal(server.parentSpanId, CALLER_SPAN, 'the caller span is the parent');
      assert.equal(server.name, 'GET orders');
      assert.deepEqual(
        {
          method: server.attributes['http.request.method'],
          path: server.attributes['url.path'],
          route: server.attributes['http.route'],
          status: server.attributes['http.response.status_code'],
          protocol: server.attributes['network.protocol.version'],
          client: server.attributes['client.address'],
          serverAddress: server.attributes['server.address'],
          serverPort: server.attributes['server.port'],
          clientId: server.attributes['portaria.client.id'],
          issuer: server.attributes['portaria.issuer.id'],
        },
        {
          method: 'GET',
          path: '/v1/orders/42',
          route: 'orders',
          status: 200,
          protocol: '1.1',
          client: '127.0.0.1',
          serverAddress: '127.0.0.1',
          serverPort: Number(new URL(gw.url).port),
          clientId: CLIENT_ID,
          issuer: 'self',
        },
      );
      assert.equal(server.resource['service.name'], 'portaria');
      assert.equal(server.resource['deployment.environment.name'], 'test');

      const children = await waitFor(
        'the server span children',
        () => {
          const found = childrenOf(receiver, server);
          return found.length === 2 ? found : undefined;
        },
        10_000,
      );
      const verify = children.find((s) => s.name === 'portaria.verify_token');
      const client = children.find((s) => s.kind === KIND.client);
      assert.ok(verify && client, `children: ${children.map((s) => s.name).join(', ')}`);
      assert.equal(verify.kind, KIND.internal);
      assert.equal(verify.attributes['portaria.token.cache_hit'], index === 1);
      assert.equal(verify.attributes['portaria.issuer.id'], 'self');
      const [check] = await waitFor('the revocation check', () => {
        const found = childrenOf(receiver, verify);
        return found.length === 1 ? found : undefined;
      });
      assert.equal(check?.name, 'portaria.revocation.check', 'cached token or not');
      assert.equal(check?.attributes['portaria.token.revoked'], false);
      assert.ok(
        check !== undefined && check.startNs >= verify.startNs && check.endNs <= verify.endNs,
      );
      assert.equal(client.name, 'GET');
      assert.equal(client.attributes['http.request.method'], 'GET');
      assert.equal(client.attributes['http.response.status_code'], 200);
      assert.equal(client.attributes['server.address'], '127.0.0.1');
      assert.equal(client.attributes['url.full'], `${gw.upstream.url}/v1/orders/42`);
      assert.equal(client.attributes['portaria.route.id'], 'orders');

      // Propagation, as the upstream saw it: the trace is the caller's, the parent the CLIENT span.
      const received = gw.upstream.received[index];
      const [, traceId, parentId] = TRACEPARENT.exec(received?.headers.traceparent as string) ?? [];
      assert.equal(traceId, CALLER_TRACE);
      assert.equal(parentId, client.spanId);
      assert.equal(received?.headers.tracestate, 'vendor=abc');
      assert.equal(received?.url, '/v1/orders/42?page=2', 'the query still reaches the upstream');

      const line = await accessLineOf(gw.logs, `req-${index}`);
      assert.deepEqual(
        { trace_id: line.trace_id, span_id: line.span_id, trace_flags: line.trace_flags },
        { trace_id: CALLER_TRACE, span_id: server.spanId, trace_flags: '01' },
      );
    }
  });

  test('a request without traceparent starts a trace; the upstream gets its context', async (t) => {
    const { gw, receiver } = await tracedGateway(t, { settings: ROUTES });
    const token = await gw.token();
    const res = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 200);
    const server = await serverSpan(receiver, 'orders');
    assert.equal(server.parentSpanId, '');
    const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') as string);
    assert.deepEqual(
      [line.trace_id, line.span_id, line.trace_flags],
      [server.traceId, server.spanId, '01'],
    );
    const client = await receiver.span(
      'the client span',
      (s) => s.parentSpanId === server.spanId && s.kind === KIND.client,
    );
    const [, traceId, parentId] =
      TRACEPARENT.exec(gw.upstream.received[0]?.headers.traceparent as string) ?? [];
    assert.deepEqual([traceId, parentId], [server.traceId, client.spanId]);
  });

  test("an invalid traceparent starts a new trace (W3C Trace Context §4.3): the caller's fields do not reach the upstream", async (t) => {
    const { gw, receiver } = await tracedGateway(t, { settings: ROUTES });
    const token = await gw.token();
    const invalid = [
      `00-${'0'.repeat(32)}-${CALLER_SPAN}-01`, // all-zero trace id
      `00-${CALLER_TRACE}-${'0'.repeat(16)}-01`, // all-zero span id
      `00-${CALLER_TRACE.toUpperCase()}-${CALLER_SPAN}-01`, // upper-case hex
      `ff-${CALLER_TRACE}-${CALLER_SPAN}-01`, // version ff is forbidden
      `00-${CALLER_TRACE}-${CALLER_SPAN}`, // no flags
      'garbage',
    ];
    for (const [index, traceparent] of invalid.entries()) {
      const id = `invalid-${index}`;
      const res = await fetch(`${gw.url}/v1/orders/${index}`, {
        headers: {
          authorization: `Bearer ${token}`,
          traceparent,
          tracestate: 'vendor=abc',
          'x-request-id': id,
        },
      });
      assert.equal(res.status, 200, traceparent);
      const server = await serverSpan(
        receiver,
        'orders',
        (s) => s.attributes['url.path'] === `/v1/orders/${index}`,
      );
      assert.equal(server.parentSpanId, '', `${traceparent}: a root span`);
      assert.notEqual(server.traceId, CALLER_TRACE);
      const client = await receiver.span(
        `the client span of ${traceparent}`,
        (s) => s.parentSpanId === server.spanId && s.kind === KIND.client,
      );
      const sent = gw.upstream.received.find((r) => r.headers['x-request-id'] === id);
      assert.equal(sent?.headers.traceparent, `00-${server.traceId}-${client.spanId}-01`);
      assert.equal(sent?.headers.tracestate, undefined, `${traceparent}: tracestate dropped`);
      const line = await accessLineOf(gw.logs, id);
      assert.equal(line.trace_id, server.traceId);
    }
  });

  test("span times are the request's: the server span within the exchange as the client saw it, the verification within the server span", async (t) => {
    const { gw, receiver } = await tracedGateway(t, { settings: ROUTES });
    const token = await gw.token();
    const before = BigInt(Date.now()) * 1_000_000n;
    const res = await fetch(`${gw.url}/v1/orders/7`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await res.arrayBuffer();
    const after = BigInt(Date.now()) * 1_000_000n;
    assert.equal(res.status, 200);
    const server = await serverSpan(receiver, 'orders');
    // Date.now() and the monotonic clock may part by a few ms over a long test run.
    const slack = 50_000_000n;
    assert.ok(
      server.startNs >= before - slack,
      'the server span starts after the request was sent',
    );
    assert.ok(server.endNs <= after + slack, 'and ends before the answer was read');
    assert.ok(server.endNs > server.startNs, 'it lasts');
    const verify = await receiver.span(
      'the verification',
      (s) => s.parentSpanId === server.spanId && s.name === 'portaria.verify_token',
    );
    assert.ok(verify.startNs >= server.startNs && verify.endNs <= server.endNs);
    const client = await receiver.span(
      'the client span',
      (s) => s.parentSpanId === server.spanId && s.kind === KIND.client,
    );
    assert.ok(client.startNs >= verify.endNs, 'the upstream is called after the verification');
    assert.ok(client.endNs > client.startNs);
  });

  test('a refused request: 401 with its reason on the server span, the failed verification as its child', async (t) => {
    const { gw, receiver } = await tracedGateway(t, { settings: ROUTES });
    const none = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { traceparent: CALLER_TRACEPARENT },
    });
    assert.equal(none.status, 401);
    const refused = await serverSpan(
      receiver,
      'unmatched',
      (s) => s.attributes['portaria.outcome.reason'] === 'no-authorization',
    );
    assert.equal(refused.attributes['http.response.status_code'], 401);
    assert.equal(refused.name, 'GET', 'no route: the method alone names it');
    assert.equal(refused.attributes['http.route'], undefined);
    assert.equal(refused.statusCode, 0, 'a 4xx is not a server error');
    assert.equal(refused.parentSpanId, CALLER_SPAN);

    const token = await gw.token();
    const bad = `${token.slice(0, -4)}AAAA`;
    const res = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${bad}` },
    });
    assert.equal(res.status, 401);
    const server = await serverSpan(
      receiver,
      'unmatched',
      (s) => s.attributes['portaria.outcome.reason'] === 'bad-signature',
    );
    const verify = await receiver.span(
      'the failed verification',
      (s) => s.parentSpanId === server.spanId,
    );
    assert.equal(verify.name, 'portaria.verify_token');
    assert.equal(verify.attributes['portaria.token.cache_hit'], false);
    assert.equal(verify.attributes['portaria.outcome.reason'], 'bad-signature');
    assert.equal(verify.statusCode, STATUS_ERROR);
    assert.equal(childrenOf(receiver, server).length, 1, 'nothing was forwarded');
  });

  test('a revoked token: the revocation check says so, the verification fails with reason revoked', async (t) => {
    const { gw, receiver } = await tracedGateway(t, { settings: ROUTES });
    const token = await gw.token();
    await gw.app.revoke(decodeJwt(token).jti as string);
    const res = await fetch(`${gw.url}/v1/orders/9`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 401);
    const server = await serverSpan(
      receiver,
      'unmatched',
      (s) => s.attributes['portaria.outcome.reason'] === 'revoked',
    );
    const verify = await receiver.span(
      'the failed verification',
      (s) => s.parentSpanId === server.spanId && s.name === 'portaria.verify_token',
    );
    assert.equal(verify.attributes['portaria.outcome.reason'], 'revoked');
    assert.equal(verify.statusCode, STATUS_ERROR);
    const check = await receiver.span(
      'the revocation check',
      (s) => s.parentSpanId === verify.spanId,
    );
    assert.equal(check.name, 'portaria.revocation.check');
    assert.equal(check.attributes['portaria.token.revoked'], true);
    assert.equal(check.statusCode, 0, 'the check itself worked');
  });

  test('the token operation: client authentication and signing as children of its server span', async (t) => {
    const { gw, receiver } = await tracedGateway(t);
    await gw.token();
    const issued = await serverSpan(
      receiver,
      'token',
      (s) => s.attributes['http.response.status_code'] === 200,
    );
    assert.equal(issued.name, 'POST token');
    assert.equal(issued.attributes['portaria.client.id'], CLIENT_ID);
    const steps = await waitFor(
      'both steps',
      () => {
        const found = childrenOf(receiver, issued);
        return found.length === 2 ? found : undefined;
      },
      10_000,
    );
    assert.deepEqual(steps.map((s) => s.name).sort(), [
      'portaria.token.authenticate_client',
      'portaria.token.sign',
    ]);

    const refused = await fetch(gw.url + TOKEN_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: `${CLIENT_SECRET}x` }),
    });
    assert.equal(refused.status, 401);
    const failed = await serverSpan(
      receiver,
      'token',
      (s) => s.attributes['http.response.status_code'] === 401,
    );
    assert.equal(
      failed.attributes['portaria.client.id'],
      undefined,
      'an unauthenticated id is not recorded',
    );
    const auth = await receiver.span(
      'the failed authentication',
      (s) => s.parentSpanId === failed.spanId,
    );
    assert.equal(auth.name, 'portaria.token.authenticate_client');
    assert.equal(auth.statusCode, STATUS_ERROR);
    assert.equal(typeof auth.attributes['portaria.outcome.reason'], 'string');
    assert.equal(childrenOf(receiver, failed).length, 1, 'nothing was signed');
  });

  test("a trusted issuer's token whose kid is new: the key-set download is a child of the verification", async (t) => {
    const first = ecKey('first');
    const second = ecKey('second');
    const jwks = await startJwksServer(t, serve(jwksOf(first)));
    const clock = new ManualClock(Date.now());
    const { gw, receiver } = await tracedGateway(t, {
      clock,
      settings: () => ({
        issuers: [
          {
            id: 'partner',
            issuer: 'https://idp.partner.test',
            audiences: ['partner-api'],
            jwksUri: jwks.url,
            allowPlainHttp: true,
            algorithms: ['ES256'],
            cooldownSeconds: 1,
          },
        ],
      }),
    });
    // The start-up download: a root span of its own.
    const startup = await receiver.span(
      'the start-up download',
      (s) => s.attributes['portaria.jwks.trigger'] === 'startup',
    );
    assert.equal(startup.parentSpanId, '');
    assert.equal(startup.kind, KIND.client);
    assert.equal(startup.attributes['url.full'], jwks.url);

    jwks.behaviour = serve(jwksOf(first, second));
    clock.advance(2000); // past the unknown-kid cooldown
    const now = Math.floor(clock.now() / 1000);
    const token = await new SignJWT({ scope: 'orders:read', client_id: 'partner-app' })
      .setProtectedHeader({ alg: 'ES256', kid: 'second', typ: 'at+jwt' })
      .setIssuer('https://idp.partner.test')
      .setAudience('partner-api')
      .setSubject('partner-app')
      .setJti('partner-token-1')
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(second.privateKey);
    const res = await fetch(`${gw.url}/anything`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 200);

    const server = await serverSpan(
      receiver,
      'default',
      (s) => s.attributes['http.response.status_code'] === 200,
    );
    assert.equal(server.attributes['portaria.issuer.id'], 'partner');
    assert.equal(server.attributes['portaria.client.id'], 'partner-app');
    const verify = await receiver.span(
      'the verification',
      (s) => s.parentSpanId === server.spanId && s.name === 'portaria.verify_token',
    );
    assert.equal(verify.attributes['portaria.token.cache_hit'], false);
    assert.equal(verify.attributes['portaria.issuer.id'], 'partner');
    const download = await receiver.span('the download', (s) => s.parentSpanId === verify.spanId);
    assert.equal(download.name, 'portaria.jwks.fetch');
    assert.equal(download.kind, KIND.client);
    assert.equal(download.traceId, server.traceId);
    assert.deepEqual(
      [
        download.attributes['portaria.issuer.id'],
        download.attributes['portaria.jwks.trigger'],
        download.attributes['portaria.jwks.outcome'],
      ],
      ['partner', 'unknown-kid', 'ok'],
    );
  });

  test('a WebSocket upgrade: server span 101, the handshake as a CLIENT span whose context reaches the upstream', async (t) => {
    const seen: IncomingHttpHeaders[] = [];
    const upstreamServer = createServer((_req, res) => res.end('plain'));
    const wss = new WebSocketServer({ noServer: true });
    upstreamServer.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      seen.push(req.headers);
      wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (data) => ws.send(data)));
    });
    upstreamServer.listen(0, '127.0.0.1');
    await once(upstreamServer, 'listening');
    t.after(async () => {
      for (const ws of wss.clients) ws.terminate();
      upstreamServer.closeAllConnections();
      await new Promise((done) => upstreamServer.close(done));
    });
    const wsUrl = `http://127.0.0.1:${(upstreamServer.address() as { port: number }).port}`;
    const { gw, receiver } = await tracedGateway(t, { settings: () => ROUTES(wsUrl) });
    const token = await gw.token();
    const socket = new WebSocket(`${gw.url.replace('http:', 'ws:')}/v1/orders/live`, {
      headers: { authorization: `Bearer ${token}`, traceparent: CALLER_TRACEPARENT },
    });
    t.after(() => socket.terminate());
    await once(socket, 'open');
    socket.send('ping');
    const [reply] = await once(socket, 'message');
    assert.equal(String(reply), 'ping');

    const server = await serverSpan(
      receiver,
      'orders',
      (s) => s.attributes['http.response.status_code'] === 101,
    );
    assert.equal(server.parentSpanId, CALLER_SPAN);
    const client = await receiver.span(
      'the handshake span',
      (s) => s.parentSpanId === server.spanId && s.kind === KIND.client,
    );
    assert.equal(client.attributes['http.response.status_code'], 101);
    assert.equal(client.statusCode, 0);
    const [, traceId, parentId] = TRACEPARENT.exec(seen[0]?.traceparent as string) ?? [];
    assert.deepEqual([traceId, parentId], [CALLER_TRACE, client.spanId]);
  });

  test('sampler always_off: nothing is exported and traceparent/tracestate reach the upstream untouched', async (t) => {
    const { gw, receiver } = await tracedGateway(t, { sampler: 'always_off' });
    const token = await gw.token();
    const res = await fetch(`${gw.url}/x`, {
      headers: {
        authorization: `Bearer ${token}`,
        traceparent: CALLER_TRACEPARENT,
        tracestate: 'vendor=abc',
        'x-request-id': 'off-caller',
      },
    });
    assert.equal(res.status, 200);
    assert.equal(gw.upstream.received[0]?.headers.traceparent, CALLER_TRACEPARENT);
    assert.equal(gw.upstream.received[0]?.headers.tracestate, 'vendor=abc');
    const line = await accessLineOf(gw.logs, 'off-caller');
    assert.deepEqual([line.trace_id, line.trace_flags], [CALLER_TRACE, '00'], "the caller's trace");

    // No caller trace: the upstream learns the gateway's decision (not sampled); the access
    // line names no trace, since nobody holds it.
    await fetch(`${gw.url}/x`, {
      headers: { authorization: `Bearer ${token}`, 'x-request-id': 'off-root' },
    });
    const [, traceId, parentId] =
      /^00-([0-9a-f]{32})-([0-9a-f]{16})-00$/.exec(
        gw.upstream.received[1]?.headers.traceparent as string,
      ) ?? [];
    assert.ok(traceId !== undefined && parentId !== undefined);
    assert.equal(gw.upstream.received[1]?.headers.tracestate, undefined);
    assert.equal((await accessLineOf(gw.logs, 'off-root')).trace_id, undefined);
    await gw.app.shutdown(); // flushes whatever was buffered
    assert.deepEqual(receiver.spans, []);
  });

  test('tracing off (the default): no span, traceparent/tracestate untouched, no trace fields in the access line', async (t) => {
    const { gw, receiver } = await tracedGateway(t, { enabled: false });
    const token = await gw.token();
    const res = await fetch(`${gw.url}/x`, {
      headers: {
        authorization: `Bearer ${token}`,
        traceparent: CALLER_TRACEPARENT,
        tracestate: 'vendor=abc',
        'x-request-id': 'off-1',
      },
    });
    assert.equal(res.status, 200);
    assert.equal(gw.upstream.received[0]?.headers.traceparent, CALLER_TRACEPARENT);
    assert.equal(gw.upstream.received[0]?.headers.tracestate, 'vendor=abc');
    const line = await accessLineOf(gw.logs, 'off-1');
    assert.equal(line.trace_id, undefined);
    await gw.app.shutdown();
    assert.deepEqual(receiver.requests, []);
  });

  test('a ratio sampler decides a new trace by its id (TraceIdRatioBased): recorded ones exported, the decision passed upstream', async (t) => {
    const { gw, receiver } = await withEnv({ OTEL_TRACES_SAMPLER_ARG: '0.5' }, () =>
      tracedGateway(t, { sampler: 'parentbased_traceidratio' }),
    );
    const token = await gw.token();
    const requests = 40;
    for (let i = 0; i < requests; i++) {
      const res = await fetch(`${gw.url}/x`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
    }
    await gw.app.shutdown(); // exports what is buffered
    const servers = new Map(
      receiver.spans.filter((s) => s.kind === KIND.server).map((s) => [s.traceId, s]),
    );
    let recorded = 0;
    for (const request of gw.upstream.received.slice(-requests)) {
      const [, traceId, parentId, flags] =
        /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/.exec(request.headers.traceparent as string) ??
        [];
      assert.ok(traceId !== undefined && parentId !== undefined);
      // The SDK's rule: the trace id's four 32-bit words XORed, under ratio × 0xffffffff.
      let word = 0;
      for (let i = 0; i < 32; i += 8)
        word = (word ^ Number.parseInt(traceId.slice(i, i + 8), 16)) >>> 0;
      const sampled = word < Math.floor(0.5 * 0xffffffff);
      assert.equal(flags, sampled ? '01' : '00', `the flag of ${traceId}`);
      assert.equal(servers.has(traceId), sampled, `a server span exported for ${traceId}`);
      if (sampled) {
        recorded++;
        const client = receiver.spans.find((s) => s.traceId === traceId && s.kind === KIND.client);
        assert.equal(parentId, client?.spanId, 'the upstream call span is the parent');
      }
    }
    // 40 fair draws: all-or-nothing has a chance of 2 in 10^12.
    assert.ok(recorded > 0 && recorded < requests, `recorded ${recorded} of ${requests}`);
  });

  test('a parent-based ratio sampler follows an unsampled caller: nothing exported, the caller decision passed on', async (t) => {
    const { gw, receiver } = await withEnv({ OTEL_TRACES_SAMPLER_ARG: '1' }, () =>
      tracedGateway(t, { sampler: 'parentbased_traceidratio' }),
    );
    const token = await gw.token();
    const unsampled = `00-${CALLER_TRACE}-${CALLER_SPAN}-00`;
    const res = await fetch(`${gw.url}/x`, {
      headers: {
        authorization: `Bearer ${token}`,
        traceparent: unsampled,
        'x-request-id': 'unsampled-1',
      },
    });
    assert.equal(res.status, 200);
    assert.equal(gw.upstream.received[0]?.headers.traceparent, unsampled);
    const line = await accessLineOf(gw.logs, 'unsampled-1');
    assert.equal(line.trace_id, CALLER_TRACE);
    assert.equal(line.trace_flags, '00');
    await gw.app.shutdown();
    assert.equal(receiver.spans.filter((s) => s.traceId === CALLER_TRACE).length, 0);
  });

  test('an OTEL_* value the SDK would silently replace stops the start, every problem named', async (t) => {
    await assert.rejects(
      withEnv(
        {
          OTEL_TRACES_SAMPLER_ARG: '10%',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318',
        },
        () => tracedGateway(t, { sampler: 'parentbased_traceidratio' }),
      ),
      (error: Error & { problems?: string[] }) => {
        assert.equal(error.name, 'ConfigError');
        assert.deepEqual(error.problems, [
          'OTEL_TRACES_SAMPLER_ARG: must be a ratio from 0 to 1 (got "10%")',
          'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must be an http:// or https:// URL',
        ]);
        return true;
      },
    );
    await assert.rejects(
      tracedGateway(t, { sampler: 'parentbased_traceidratio_typo' }),
      /OTEL_TRACES_SAMPLER: must be one of always_on, .* \(got "parentbased_traceidratio_typo"\)/,
    );
  });

  test('the drain exports the spans still buffered', async (t) => {
    const { gw, receiver } = await withEnv({ OTEL_BSP_SCHEDULE_DELAY: '600000' }, () =>
      tracedGateway(t),
    );
    const token = await gw.token();
    assert.equal(
      (await fetch(`${gw.url}/x`, { headers: { authorization: `Bearer ${token}` } })).status,
      200,
    );
    assert.equal(receiver.spans.length, 0, 'nothing exported before the drain');
    await gw.app.shutdown();
    assert.ok(
      receiver.spans.some(
        (s) => s.kind === KIND.server && s.attributes['portaria.route.id'] === 'default',
      ),
      `exported at shutdown: ${receiver.spans.map((s) => s.name).join(', ')}`,
    );
  });

  test('a refused export is logged at warn, once, and the request is unaffected', async (t) => {
    const refusing = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    refusing.listen(0, '127.0.0.1');
    await once(refusing, 'listening');
    t.after(() => {
      refusing.closeAllConnections();
      return new Promise<void>((resolve) => refusing.close(() => resolve()));
    });
    const endpoint = `http://127.0.0.1:${(refusing.address() as { port: number }).port}/v1/traces`;
    const { gw } = await withEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint }, () =>
      tracedGateway(t),
    );
    const token = await gw.token();
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${gw.url}/x`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
      await sleep(120); // let each batch go out on its own
    }
    const warned = () => gw.logs.filter((line) => line.includes('tracing: span export failed'));
    await waitFor(
      'the export failure line',
      () => (warned().length > 0 ? true : undefined),
      10_000,
    );
    const line = JSON.parse(warned()[0] as string) as Record<string, unknown>;
    assert.equal(line.level, 'warn');
    assert.equal(warned().length, 1, 'at most one line a minute');
  });

  test('no token, secret, Authorization value or query string appears anywhere in the exported spans', async (t) => {
    const { gw, receiver } = await tracedGateway(t, { settings: ROUTES });
    const token = await gw.token();
    const query = 'api_key=q-s3cr3t-value';
    await fetch(`${gw.url}/v1/orders/1?${query}`, {
      headers: { authorization: `Bearer ${token}`, traceparent: CALLER_TRACEPARENT },
    });
    await fetch(`${gw.url}/v1/orders/1?${query}`, {
      headers: { authorization: `Bearer ${token}x` },
    });
    await fetch(`${gw.url}/v1/nothing?${query}`, {
      headers: { authorization: `Basic ${CLIENT_SECRET}` },
    });
    await fetch(`${gw.url + TOKEN_PATH}?${query}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: `${CLIENT_SECRET}-wrong` }),
    });
    await gw.app.shutdown();
    assert.ok(receiver.spans.length >= 10, `spans exported: ${receiver.spans.length}`);
    assert.ok(
      receiver.requests.every(
        (r) => r.path === '/v1/traces' && r.contentType === 'application/json',
      ),
    );
    const exported = receiver.bodies.join('\n');
    const [header, payload, signature] = token.split('.') as [string, string, string];
    for (const secret of [
      token,
      header,
      payload,
      signature,
      CLIENT_SECRET,
      'q-s3cr3t-value',
      'api_key',
      'Bearer',
      'Basic',
    ]) {
      assert.ok(!exported.includes(secret), `exported spans contain ${secret.slice(0, 12)}…`);
    }
  });
  test('a metered request: the server span names its quota policy and decision, allowed and refused', async (t) => {
    const { gw, receiver } = await tracedGateway(t, {
      settings: (upstream) => ({
        quotas: { policies: { daily: { quota: { limit: 1, window: 'day' } } } },
        routes: [{ id: 'orders', prefix: '/v1/orders', upstream, quota: 'daily' }],
        upstream: { default: null },
      }),
    });
    const token = await gw.token();
    const send = () =>
      fetch(`${gw.url}/v1/orders/1`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal((await send()).status, 200);
    assert.equal((await send()).status, 429);
    for (const outcome of ['allowed', 'refused']) {
      const span = await serverSpan(
        receiver,
        'orders',
        (s) => s.attributes['portaria.quota.outcome'] === outcome,
      );
      assert.equal(span.attributes['portaria.quota.policy'], 'daily');
    }
  });
});
