/**
 * Envoy's ext_authz v3 over gRPC on a real gateway in `mode: authorizer`, asked with a
 * real grpc-js client built from the same published protos, with CheckRequests shaped as
 * Envoy sends them (lower-case header keys, the path with its query, the peer
 * certificate URL-encoded): the same verification, route, scope, revocation and binding
 * steps as the HTTP entries; every answer an OK RPC whose CheckResponse allows (identity
 * headers, reserved names to remove) or denies (the HTTP status, challenge and problem
 * details Envoy sends the client).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Client, credentials, status as grpcStatus } from '@grpc/grpc-js';
import { decodeJwt } from 'jose';
import { parseList } from 'structured-headers';
import { parseAllDocuments } from 'yaml';
import { serviceClient } from '../../src/authorizer/envoyProtos.js';
import { configSchema } from '../../src/config/schema.js';
import { certificateThumbprint } from '../../src/domain/clientCertificate.js';
import { type IssuedCertificate, TestCa } from '../helpers/certificates.js';
import { dpopBoundToken, dpopKeys, dpopProof } from '../helpers/dpopKeys.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  DEFAULT_CLIENTS,
  type Gateway,
  startGateway,
} from '../helpers/fixture.js';
import { runGateway } from '../helpers/process.js';
import { accessLineOf } from '../helpers/wait.js';
import { namedClientCertificate } from '../oauth/mtlsCertificates.js';
import { KIND, startOtlpReceiver, withEnv } from '../observability/otlpReceiver.js';

type Settings = Record<string, unknown>;

function authorizerSettings(extra: Settings = {}) {
  return () => ({
    mode: 'authorizer',
    server: { trustedProxies: ['127.0.0.1'] },
    authorizer: { host: '127.0.0.1', port: 0, grpc: { enabled: true, port: 0 } },
    upstream: { default: null },
    routes: [
      { id: 'orders', prefix: '/v1/orders', scopes: ['orders:read'] },
      { id: 'admin', prefix: '/v1/admin', scopes: ['admin'] },
    ],
    ...extra,
  });
}

interface HeaderOption {
  header: { key: string; value: string };
  append: { value: boolean } | null;
  append_action: string;
}

interface CheckResponse {
  status: { code: number } | null;
  http_response: 'ok_response' | 'denied_response';
  ok_response: {
    headers: HeaderOption[];
    headers_to_remove: string[];
    response_headers_to_add: HeaderOption[];
  } | null;
  denied_response: {
    status: { code: string | number };
    headers: HeaderOption[];
    body: string;
  } | null;
}

type Unary = (
  request: unknown,
  options: { deadline: number },
  callback: (error: Error | null, response: unknown) => void,
) => void;

/** A client of the gateway's gRPC listener, closed with the test. */
function clientOf(
  t: { after(fn: () => void): void },
  gw: Gateway,
  which: 'authorization' | 'health' = 'authorization',
) {
  assert.match(gw.grpcUrl, /^grpc:\/\/127\.0\.0\.1:\d+$/);
  const Service = serviceClient(which);
  const client = new Service(gw.grpcUrl.slice('grpc://'.length), credentials.createInsecure());
  t.after(() => client.close());
  return client as unknown as Client & { Check: Unary };
}

function call(client: { Check: Unary }, message: unknown): Promise<CheckResponse> {
  return new Promise((resolve, reject) => {
    client.Check(message, { deadline: Date.now() + 5000 }, (error, response) =>
      error === null ? resolve(response as CheckResponse) : reject(error),
    );
  });
}

/** A CheckRequest as Envoy's HTTP filter builds it. */
function checkRequest(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  certificate = '',
) {
  return {
    attributes: {
      source: {
        address: { socket_address: { address: '203.0.113.7', port_value: 51234 } },
        certificate,
      },
      destination: { address: { socket_address: { address: '10.0.0.2', port_value: 8443 } } },
      request: {
        http: {
          id: '1234567890',
          method,
          path,
          host: 'api.example.com',
          scheme: 'https',
          protocol: 'HTTP/1.1',
          headers: {
            ':authority': 'api.example.com',
            ':method': method,
            ':path': path,
            'user-agent': 'curl/8.5.0',
            ...headers,
          },
        },
      },
    },
  };
}

/** The headers of a CheckResponse as `name → value`, checking each overwrites. */
function headerMap(options: readonly HeaderOption[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const option of options) {
    assert.equal(option.append_action, 'OVERWRITE_IF_EXISTS_OR_ADD', option.header.key);
    assert.deepEqual(option.append, { value: false }, option.header.key);
    out[option.header.key] = option.header.value;
  }
  return out;
}

function denied(response: CheckResponse) {
  assert.equal(response.http_response, 'denied_response');
  const answer = response.denied_response;
  assert.ok(answer);
  return {
    rpc: response.status?.code,
    status: answer.status.code,
    headers: headerMap(answer.headers),
    body: answer.body === '' ? null : (JSON.parse(answer.body) as Record<string, unknown>),
  };
}

describe('Envoy ext_authz over gRPC', () => {
  test('an allowed request: OK with the identity headers, and the spoofed names to remove', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const client = clientOf(t, gw);
    const token = await gw.token();
    const response = await call(
      client,
      checkRequest('GET', '/v1/orders/42?x=1', {
        authorization: `Bearer ${token}`,
        x_client_id: 'mallory',
        'x-request-id': 'grpc-allowed-1',
      }),
    );
    assert.equal(response.status?.code, 0);
    assert.equal(response.http_response, 'ok_response');
    const ok = response.ok_response;
    assert.ok(ok);
    const set = headerMap(ok.headers);
    assert.equal(set['x-client-id'], 'acme');
    assert.equal(set['x-token-scope'], 'orders:read orders:write');
    assert.ok(set['x-token-jti']);
    assert.ok(ok.headers_to_remove.includes('x_client_id'), ok.headers_to_remove.join(','));
    assert.ok(!ok.headers_to_remove.includes('x-client-id'));
    const line = await accessLineOf(gw.logs, 'grpc-allowed-1');
    assert.equal(line['portaria.decision.entry'], 'envoy-grpc');
    assert.equal(line['http.route'], 'orders');
    assert.equal(line['url.path'], '/v1/orders/42');
    assert.equal(line['http.request.method'], 'GET');
    assert.equal(line['http.response.status_code'], 200);
    assert.equal(line['client.address'], '203.0.113.7');
  });

  test('a metered route: the RateLimit fields for the client on allow (response_headers_to_add), RESOURCE_EXHAUSTED 429 past the limit', async (t) => {
    const gw = await startGateway(t, {
      settings: authorizerSettings({
        quotas: { policies: { standard: { quota: { limit: 2, window: 'day' } } } },
        routes: [
          { id: 'orders', prefix: '/v1/orders', scopes: ['orders:read'], quota: 'standard' },
        ],
      }),
    });
    const client = clientOf(t, gw);
    const auth = { authorization: `Bearer ${await gw.token()}` };
    const remaining: unknown[] = [];
    for (const id of ['1', '2']) {
      const response = await call(client, checkRequest('GET', `/v1/orders/${id}`, auth));
      assert.equal(response.status?.code, 0);
      const ok = response.ok_response;
      assert.ok(ok);
      // For the client's answer, never the upstream's request.
      const answer = headerMap(ok.response_headers_to_add);
      assert.equal(headerMap(ok.headers).ratelimit, undefined);
      const policy = parseList(answer['ratelimit-policy'] ?? '');
      assert.deepEqual(
        policy.map(([item, params]) => [item, Object.fromEntries(params)]),
        [['standard-quota', { q: 2, w: 86400 }]],
      );
      const [[item, params]] = parseList(answer.ratelimit ?? '') as [
        [unknown, Map<string, unknown>],
      ];
      assert.equal(item, 'standard-quota');
      remaining.push(params.get('r'));
    }
    assert.deepEqual(remaining, [1, 0]);
    const refused = denied(await call(client, checkRequest('GET', '/v1/orders/3', auth)));
    assert.equal(refused.rpc, 8);
    assert.equal(refused.status, 'TooManyRequests');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.match(refused.headers.ratelimit ?? '', /^"standard-quota";r=0;t=\d+$/);
    assert.equal(refused.body?.tipo, 'urn:portaria:problem:quota-exceeded');
  });

  test('DPoP: a fresh proof for the scheme and host Envoy names passes; a replayed, misaddressed or missing proof is denied with the DPoP challenge', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings({ dpop: { enabled: true } }) });
    const client = clientOf(t, gw);
    const keys = await dpopKeys();
    const token = await dpopBoundToken(gw.url, keys, CLIENT_ID, CLIENT_SECRET);
    // checkRequest names https://api.example.com as the client's origin.
    const url = 'https://api.example.com/v1/orders/42';
    const proof = await dpopProof(keys, 'GET', url, { token });
    const ask = (sent: Record<string, string>, path = '/v1/orders/42') =>
      call(client, checkRequest('GET', path, { authorization: `DPoP ${token}`, ...sent }));
    const allowed = await ask({ dpop: proof });
    assert.equal(allowed.status?.code, 0, JSON.stringify(allowed.denied_response));
    assert.equal(headerMap(allowed.ok_response?.headers ?? [])['x-client-id'], CLIENT_ID);
    const refusal = async (sent: Record<string, string>, reason: string, path?: string) => {
      const id = `grpc-dpop-${reason}`;
      const answer = denied(await ask({ ...sent, 'x-request-id': id }, path));
      assert.equal(answer.rpc, grpcStatus.UNAUTHENTICATED, reason);
      assert.match(answer.headers['www-authenticate'] ?? '', /^DPoP algs="[^"]*ES256[^"]*"/);
      assert.equal((await accessLineOf(gw.logs, id))['portaria.reason'], reason);
    };
    await refusal({ dpop: proof }, 'dpop-replayed');
    await refusal(
      { dpop: await dpopProof(keys, 'GET', url, { token }) },
      'dpop-htu',
      '/v1/orders/7',
    );
    await refusal({}, 'dpop-proof-missing');
    const bearer = denied(
      await call(
        client,
        checkRequest('GET', '/v1/orders/42', { authorization: `Bearer ${token}` }),
      ),
    );
    assert.equal(bearer.rpc, grpcStatus.UNAUTHENTICATED);
  });

  test('no token: UNAUTHENTICATED, denied 401 with the challenge and the problem details', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const client = clientOf(t, gw);
    const answer = denied(
      await call(client, checkRequest('GET', '/v1/orders', { 'x-request-id': 'grpc-none-1' })),
    );
    assert.equal(answer.rpc, grpcStatus.UNAUTHENTICATED);
    assert.equal(answer.status, 'Unauthorized');
    assert.match(answer.headers['www-authenticate'] ?? '', /^Bearer realm="portaria"/);
    assert.equal(answer.headers['content-type'], 'application/problem+json');
    assert.equal(answer.headers['cache-control'], 'no-store');
    assert.equal(answer.headers['x-request-id'], 'grpc-none-1');
    assert.equal(answer.body?.tipo, 'urn:portaria:problem:token-missing');
    assert.equal(answer.body?.status, 401);
    assert.equal(answer.body?.instancia, '/v1/orders#grpc-none-1');
    const line = await accessLineOf(gw.logs, 'grpc-none-1');
    assert.equal(line['portaria.decision.entry'], 'envoy-grpc');
    assert.equal(line['http.response.status_code'], 401);
    assert.equal(line['portaria.reason'], 'no-authorization');
  });

  test("Envoy's encode_raw_headers: header_map read as the map, a repeated Authorization refused", async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const client = clientOf(t, gw);
    const token = await gw.token();
    const raw = (entries: [string, string][], id: string) => {
      const request = checkRequest('GET', '/v1/orders/3');
      const http = request.attributes.request.http as Record<string, unknown>;
      http.headers = {};
      http.header_map = {
        headers: [
          ...entries.map(([key, value]) => ({ key, raw_value: Buffer.from(value) })),
          { key: 'x-request-id', raw_value: Buffer.from(id) },
        ],
      };
      return call(client, request);
    };
    const ok = await raw(
      [
        ['authorization', `Bearer ${token}`],
        ['x_client_id', 'mallory'],
      ],
      'grpc-raw-ok',
    );
    assert.equal(ok.status?.code, 0);
    assert.ok(ok.ok_response?.headers_to_remove.includes('x_client_id'));
    const twice = denied(
      await raw(
        [
          ['authorization', `Bearer ${token}`],
          ['authorization', `Bearer ${token}`],
        ],
        'grpc-raw-twice',
      ),
    );
    assert.equal(twice.status, 'Unauthorized');
    const line = await accessLineOf(gw.logs, 'grpc-raw-twice');
    assert.equal(line['portaria.reason'], 'multiple-authorization');
  });

  test('a missing scope: PERMISSION_DENIED, denied 403 with insufficient_scope', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const client = clientOf(t, gw);
    const token = await gw.token('reader', 'reader-secret-0123456789abcdefghijklmnopq');
    const answer = denied(
      await call(client, checkRequest('POST', '/v1/admin/x', { authorization: `Bearer ${token}` })),
    );
    assert.equal(answer.rpc, grpcStatus.PERMISSION_DENIED);
    assert.equal(answer.status, 'Forbidden');
    assert.match(answer.headers['www-authenticate'] ?? '', /insufficient_scope/);
    assert.equal(answer.body?.tipo, 'urn:portaria:problem:insufficient-scope');
    const missing = denied(
      await call(client, checkRequest('GET', '/v2/else', { authorization: `Bearer ${token}` })),
    );
    assert.equal(missing.rpc, grpcStatus.NOT_FOUND);
    assert.equal(missing.status, 'NotFound');
  });

  test('a revoked token is refused at the next decision', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const client = clientOf(t, gw);
    const token = await gw.token();
    const ask = () =>
      call(client, checkRequest('GET', '/v1/orders', { authorization: `Bearer ${token}` }));
    assert.equal((await ask()).status?.code, 0);
    await gw.app.revoke(decodeJwt(token).jti as string);
    const answer = denied(await ask());
    assert.equal(answer.rpc, grpcStatus.UNAUTHENTICATED);
    assert.equal(answer.body?.tipo, 'urn:portaria:problem:token-revoked');
  });

  test('path tricks in the original path are refused as in proxy mode', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const client = clientOf(t, gw);
    const token = await gw.token();
    for (const path of [
      '/v1/orders/../admin',
      '/v1/orders/%2e%2e/admin',
      '/v1//admin',
      'v1/orders',
      '/v1/orders/%2F',
    ]) {
      const answer = denied(
        await call(client, checkRequest('GET', path, { authorization: `Bearer ${token}` })),
      );
      assert.equal(answer.rpc, grpcStatus.INVALID_ARGUMENT, path);
      assert.equal(answer.status, 'BadRequest', path);
      assert.equal(answer.body?.tipo, 'urn:portaria:problem:invalid-path', path);
    }
  });

  test('a CheckRequest without attributes, method or path is a denied 400, never a crash', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const client = clientOf(t, gw);
    for (const message of [
      {},
      { attributes: {} },
      { attributes: { request: { http: { method: 'GET' } } } },
      { attributes: { request: { http: { method: 'G E T', path: '/v1/orders' } } } },
    ]) {
      const answer = denied(await call(client, message));
      assert.equal(answer.rpc, grpcStatus.INVALID_ARGUMENT, JSON.stringify(message));
      assert.equal(answer.status, 'BadRequest');
      assert.equal(answer.body?.tipo, 'urn:portaria:problem:invalid-request');
    }
    // More fields than server.maxHeaderLines (pseudo-headers not counted): 431, as on HTTP.
    const many: Record<string, string> = {};
    for (let i = 0; i < 97; i++) many[`x-extra-${i}`] = 'v';
    const fits = denied(await call(client, checkRequest('GET', '/v1/orders', many)));
    assert.equal(fits.status, 'Unauthorized', 'user-agent and 97 more make 98 fields');
    for (let i = 97; i < 101; i++) many[`x-extra-${i}`] = 'v';
    const tooMany = denied(await call(client, checkRequest('GET', '/v1/orders', many)));
    assert.equal(tooMany.status, 'RequestHeaderFieldsTooLarge');
    assert.equal(tooMany.body?.tipo, 'urn:portaria:problem:headers-too-large');
    assert.equal(tooMany.headers.connection, undefined, 'no hop-by-hop header in the reply');
    // Still answering.
    const token = await gw.token();
    const ok = await call(
      client,
      checkRequest('GET', '/v1/orders', { authorization: `Bearer ${token}` }),
    );
    assert.equal(ok.status?.code, 0);
  });

  test('a peer that is not one of server.trustedProxies is denied 403 untrusted-peer', async (t) => {
    const gw = await startGateway(t, {
      settings: authorizerSettings({ server: { trustedProxies: ['10.0.0.0/8'] } }),
    });
    const client = clientOf(t, gw);
    const token = await gw.token();
    const answer = denied(
      await call(
        client,
        checkRequest('GET', '/v1/orders', {
          authorization: `Bearer ${token}`,
          'x-request-id': 'grpc-untrusted-1',
        }),
      ),
    );
    assert.equal(answer.rpc, grpcStatus.PERMISSION_DENIED);
    assert.equal(answer.status, 'Forbidden');
    assert.equal(answer.body?.tipo, 'urn:portaria:problem:untrusted-peer');
    const line = await accessLineOf(gw.logs, 'grpc-untrusted-1');
    assert.equal(line['portaria.reason'], 'peer-not-trusted');
    // The source address Envoy names is believed from a trusted proxy only.
    assert.equal(line['client.address'], '127.0.0.1');
  });

  test("the original request's traceparent parents the decision's server span", async (t) => {
    const receiver = await startOtlpReceiver(t);
    const gw = await withEnv(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_TRACES_SAMPLER: 'parentbased_always_on',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
      () =>
        startGateway(t, {
          settings: () => ({ ...authorizerSettings()(), tracing: { enabled: true } }),
        }),
    );
    const client = clientOf(t, gw);
    const token = await gw.token();
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const response = await call(
      client,
      checkRequest('GET', '/v1/orders/9', {
        authorization: `Bearer ${token}`,
        traceparent: `00-${callerTrace}-${callerSpan}-01`,
        'x-request-id': 'grpc-traced-1',
      }),
    );
    assert.equal(response.status?.code, 0);
    const line = await accessLineOf(gw.logs, 'grpc-traced-1');
    assert.equal(line.trace_id, callerTrace);
    const span = await receiver.span(
      'the decision server span',
      (s) => s.kind === KIND.server && s.traceId === callerTrace,
    );
    assert.equal(span.parentSpanId, callerSpan);
    assert.equal(span.attributes['http.route'], 'orders');
    assert.equal(span.attributes['url.path'], '/v1/orders/9');
  });

  test('the health service answers SERVING; an unknown service NOT_FOUND', async (t) => {
    const gw = await startGateway(t, { settings: authorizerSettings() });
    const health = clientOf(t, gw, 'health');
    const whole = (await call(health, {})) as unknown as { status: string };
    assert.equal(whole.status, 'SERVING');
    const named = (await call(health, {
      service: 'envoy.service.auth.v3.Authorization',
    })) as unknown as { status: string };
    assert.equal(named.status, 'SERVING');
    await assert.rejects(call(health, { service: 'other' }), {
      code: grpcStatus.NOT_FOUND,
    });
  });

  test('the listener is off with authorizer.grpc.enabled false', async (t) => {
    const gw = await startGateway(t, {
      settings: authorizerSettings({
        authorizer: { host: '127.0.0.1', port: 0, grpc: { enabled: false } },
      }),
    });
    assert.equal(gw.grpcUrl, '');
    assert.match(gw.authorizerUrl, /^http:/);
  });
});

describe('Envoy ext_authz over gRPC with the peer certificate', () => {
  let dir = '';
  let ca: TestCa;
  let partner: IssuedCertificate;
  let other: IssuedCertificate;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'portaria-grpc-cert-'));
    ca = await TestCa.create(dir, 'envoy-ca');
    partner = await namedClientCertificate(dir, ca, 'partner', {
      subject: '/O=Acme/CN=partner',
    });
    other = await namedClientCertificate(dir, ca, 'other', { subject: '/O=Acme/CN=other' });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** A token bound to `certificate`, from the token endpoint behind a proxy (RFC 9440). */
  function boundToken(gw: Gateway, certificate: IssuedCertificate): Promise<string> {
    const { hostname, port } = new URL(gw.url);
    const body = 'grant_type=client_credentials&client_id=partner';
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: hostname,
          port,
          method: 'POST',
          path: '/oauth2/token',
          agent: false,
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'content-length': Buffer.byteLength(body),
            'client-cert': `:${certificate.der.toString('base64')}:`,
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () => {
            const answer = JSON.parse(text) as Record<string, unknown>;
            if (res.statusCode !== 200) reject(new Error(`token: ${res.statusCode} ${text}`));
            else resolve(answer.access_token as string);
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  test('a certificate-bound token passes with its certificate and is refused with another', async (t) => {
    const gw = await startGateway(t, {
      clients: [
        ...DEFAULT_CLIENTS,
        {
          id: 'partner',
          secret: '',
          scopes: ['orders:read'],
          extra: {
            authMethods: ['tls_client_auth'],
            tlsClientAuth: { subjectDn: 'CN=partner,O=Acme' },
          },
        },
      ],
      settings: authorizerSettings({
        clientCertificate: { source: 'header', caFiles: [ca.certFile] },
      }),
    });
    const client = clientOf(t, gw);
    const token = await boundToken(gw, partner);
    assert.deepEqual(decodeJwt(token).cnf, { 'x5t#S256': certificateThumbprint(partner.der) });
    const ask = (certificate: string, id: string) =>
      call(
        client,
        checkRequest(
          'GET',
          '/v1/orders/1',
          { authorization: `Bearer ${token}`, 'x-request-id': id },
          certificate,
        ),
      );

    // Envoy's include_peer_certificate: the leaf's PEM, URL-encoded.
    const right = await ask(encodeURIComponent(partner.cert), 'grpc-bound-right');
    assert.equal(right.status?.code, 0, JSON.stringify(right.denied_response));
    assert.equal(headerMap(right.ok_response?.headers ?? [])['x-client-id'], 'partner');
    const rightLine = await accessLineOf(gw.logs, 'grpc-bound-right');
    assert.equal(
      rightLine['tls.client.hash.sha256'],
      createHash('sha256').update(partner.der).digest('hex').toUpperCase(),
    );
    assert.equal(rightLine['portaria.client_certificate.verdict'], 'verified');

    const wrong = denied(await ask(encodeURIComponent(other.cert), 'grpc-bound-wrong'));
    assert.equal(wrong.rpc, grpcStatus.UNAUTHENTICATED);
    assert.equal(wrong.status, 'Unauthorized');
    assert.equal(wrong.body?.tipo, 'urn:portaria:problem:token-binding-failed');
    const wrongLine = await accessLineOf(gw.logs, 'grpc-bound-wrong');
    assert.equal(wrongLine['portaria.reason'], 'certificate-mismatch');

    const none = denied(await ask('', 'grpc-bound-none'));
    assert.equal(none.rpc, grpcStatus.UNAUTHENTICATED);
    assert.equal(none.body?.tipo, 'urn:portaria:problem:token-binding-failed');
    const noneLine = await accessLineOf(gw.logs, 'grpc-bound-none');
    assert.equal(noneLine['portaria.reason'], 'bound-no-certificate');

    const garbled = denied(await ask('-----BEGIN CERTIFICATE-----', 'grpc-bound-garbled'));
    assert.equal(garbled.status, 'BadRequest');
    assert.match(String(garbled.body?.detalhe), /attributes\.source\.certificate/);
  });
});

test('a gRPC port in use is a start-up error naming authorizer.grpc.port', async (t) => {
  const cwd = await mkdtemp(join(tmpdir(), 'portaria-grpc-busy-'));
  t.after(() => rm(cwd, { recursive: true, force: true }));
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => busy.close(() => resolve())));
  const busyPort = (busy.address() as AddressInfo).port;
  const failed = runGateway(t, ['--demo'], {
    cwd,
    env: {
      PORTARIA_SERVER__PORT: '0',
      PORTARIA_ADMIN__PORT: '0',
      PORTARIA_MODE: 'both',
      PORTARIA_SERVER__TRUSTED_PROXIES: '127.0.0.1',
      PORTARIA_AUTHORIZER__HOST: '127.0.0.1',
      PORTARIA_AUTHORIZER__PORT: '0',
      PORTARIA_AUTHORIZER__GRPC__PORT: String(busyPort),
    },
  });
  const { code } = await failed.exited;
  assert.equal(code, 1);
  assert.match(
    failed.stderr(),
    new RegExp(
      `authorizer\\.host/authorizer\\.grpc\\.port: cannot listen on 127\\.0\\.0\\.1:${busyPort}: the address is already in use .*\\(EADDRINUSE\\); change authorizer\\.grpc\\.port \\(PORTARIA_AUTHORIZER__GRPC__PORT\\)`,
    ),
  );
  assert.doesNotMatch(failed.stderr(), /\n\s+at /, 'no stack trace');
});

describe('the gRPC examples (docs/examples)', () => {
  const example = (name: string) =>
    readFile(fileURLToPath(new URL(`../../../docs/examples/${name}`, import.meta.url)), 'utf8');
  const defaultPort = (
    configSchema as unknown as {
      properties: {
        authorizer: { properties: { grpc: { properties: { port: { default: number } } } } };
      };
    }
  ).properties.authorizer.properties.grpc.properties.port.default;
  // biome-ignore lint/suspicious/noExplicitAny: walking parsed YAML; a wrong path fails the test.
  type Node = Record<string, any>;
  const documents = async (name: string): Promise<Node[]> =>
    parseAllDocuments(await example(name)).map((document) => {
      assert.deepEqual(document.errors, [], name);
      return document.toJS() as Node;
    });
  const kind = (all: Node[], name: string): Node => {
    const found = all.find((document) => document.kind === name);
    assert.ok(found, name);
    return found;
  };

  test('envoy-ext-authz.yaml: gRPC V3 to the portaria cluster on the default port, failing closed, the peer certificate included', async () => {
    assert.equal(defaultPort, 9191);
    const [envoy] = await documents('envoy-ext-authz.yaml');
    assert.ok(envoy);
    const { listeners, clusters } = envoy.static_resources;
    const filters = listeners[0].filter_chains[0].filters[0].typed_config.http_filters;
    const extAuthz = filters.find((f: Node) => f.name === 'envoy.filters.http.ext_authz');
    assert.ok(extAuthz);
    const config = extAuthz.typed_config;
    assert.equal(
      config['@type'],
      'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz',
    );
    assert.equal(config.transport_api_version, 'V3');
    assert.equal(config.include_peer_certificate, true);
    assert.equal(config.failure_mode_allow, false);
    assert.equal(config.with_request_body, undefined);
    const cluster = clusters.find(
      (c: Node) => c.name === config.grpc_service.envoy_grpc.cluster_name,
    );
    assert.ok(cluster);
    assert.equal(cluster.name, 'portaria');
    const address = cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address;
    assert.deepEqual(address.socket_address, { address: 'portaria', port_value: defaultPort });
    assert.ok(cluster.typed_extension_protocol_options, 'gRPC needs HTTP/2 to the cluster');
    assert.deepEqual(cluster.health_checks[0].grpc_health_check, {});
    // The ext_authz filter runs before the router.
    assert.equal(filters.at(-1).name, 'envoy.filters.http.router');
  });

  test('istio-authorizer.yaml: the provider names the Service and port the policy and Service use', async () => {
    const all = await documents('istio-authorizer.yaml');
    const providers = kind(all, 'IstioOperator').spec.meshConfig.extensionProviders;
    const provider = providers[0];
    assert.equal(provider.envoyExtAuthzGrpc.port, defaultPort);
    assert.equal(provider.envoyExtAuthzGrpc.failOpen, false);
    const service = kind(all, 'Service');
    assert.equal(
      provider.envoyExtAuthzGrpc.service,
      `${service.metadata.name}.${service.metadata.namespace}.svc.cluster.local`,
    );
    assert.equal(service.spec.ports[0].port, defaultPort);
    assert.match(service.spec.ports[0].name, /^grpc/);
    const policy = kind(all, 'AuthorizationPolicy');
    assert.equal(policy.spec.action, 'CUSTOM');
    assert.equal(policy.spec.provider.name, provider.name);
  });

  test('contour-extension-service.yaml: the HTTPProxy names the ExtensionService on the default port', async () => {
    const all = await documents('contour-extension-service.yaml');
    const extension = kind(all, 'ExtensionService');
    const service = kind(all, 'Service');
    assert.equal(extension.spec.services[0].name, service.metadata.name);
    assert.equal(extension.spec.services[0].port, defaultPort);
    assert.equal(service.spec.ports[0].port, defaultPort);
    assert.equal(extension.spec.protocol, 'h2c');
    const authorization = kind(all, 'HTTPProxy').spec.virtualhost.authorization;
    assert.deepEqual(authorization.extensionRef, {
      name: extension.metadata.name,
      namespace: extension.metadata.namespace,
    });
    assert.equal(authorization.failOpen, false);
  });
});
