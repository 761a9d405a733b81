import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, test } from 'node:test';
import { TrustedProxies } from '../../src/lib/trustedProxies.js';
import {
  createHeaderPolicy,
  type HeaderPolicyOptions,
  type UpstreamRequestContext,
} from '../../src/proxy/headers.js';
import { IDENTITY_HEADERS, principal } from './fixtures.js';

function policyOf(options: Partial<HeaderPolicyOptions> = {}) {
  return createHeaderPolicy({
    identityHeaders: IDENTITY_HEADERS,
    forwardAuthorization: true,
    trustedProxies: new TrustedProxies([]),
    forwardCallerHeaders: [],
    ...options,
  });
}

const untrusted = policyOf();
/** The peer (ctx) and 10.0.0.0/8 are trusted proxies. */
const trusted = policyOf({ trustedProxies: new TrustedProxies(['203.0.113.7', '10.0.0.0/8']) });
const noAuthorization = policyOf({ forwardAuthorization: false });

const ctx: UpstreamRequestContext = {
  principal: principal(),
  requestId: 'req-1',
  peerAddress: '203.0.113.7',
  host: 'api.example.com',
  proto: 'https',
};

/** What the gateway always adds for `ctx` with untrusted forwarding headers. */
const GATEWAY_SET = {
  'x-forwarded-for': '203.0.113.7',
  'x-forwarded-proto': 'https',
  'x-forwarded-host': 'api.example.com',
  'x-real-ip': '203.0.113.7',
  forwarded: 'for=203.0.113.7;host=api.example.com;proto=https',
  'x-request-id': 'req-1',
  'x-client-id': 'client-a',
  'x-token-scope': 'orders:read orders:write',
  'x-token-jti': 'jti-1',
};

function upstream(
  policy: typeof untrusted,
  incoming: IncomingHttpHeaders,
  context: UpstreamRequestContext = ctx,
) {
  return { ...policy.upstreamRequestHeaders(incoming, context) };
}

describe('upstream request headers', () => {
  test('end-to-end headers pass unchanged and the gateway adds its own', () => {
    assert.deepEqual(
      upstream(untrusted, {
        accept: 'application/json',
        'content-type': 'application/json',
        'content-length': '12',
        cookie: 'a=1; b=2',
        authorization: 'Bearer abc',
      }),
      {
        accept: 'application/json',
        'content-type': 'application/json',
        'content-length': '12',
        cookie: 'a=1; b=2',
        authorization: 'Bearer abc',
        ...GATEWAY_SET,
      },
    );
  });

  test('hop-by-hop headers, host and expect are removed', () => {
    assert.deepEqual(
      upstream(untrusted, {
        connection: 'keep-alive',
        'keep-alive': 'timeout=5',
        'proxy-connection': 'keep-alive',
        'proxy-authenticate': 'Basic',
        'proxy-authorization': 'Basic Zm9vOmJhcg==',
        te: 'trailers',
        trailer: 'x-checksum',
        'transfer-encoding': 'chunked',
        upgrade: 'h2c',
        host: 'api.example.com',
        expect: '100-continue',
        accept: '*/*',
      }),
      { accept: '*/*', ...GATEWAY_SET },
    );
  });

  test('headers nominated by Connection are removed, in any case and spacing', () => {
    assert.deepEqual(
      upstream(untrusted, {
        connection: 'keep-alive, X-Internal ,x-debug',
        'x-internal': 'yes',
        'x-debug': '1',
        'x-kept': 'k',
      }),
      { 'x-kept': 'k', ...GATEWAY_SET },
    );
  });

  test('spoofed identity headers never reach the upstream, whatever the spelling', () => {
    const spoofed = upstream(untrusted, {
      'x-client-id': 'admin',
      x_client_id: 'admin',
      'x-client_id': 'admin',
      'x_token-scope': 'admin:all',
      'x-token-jti': 'forged',
    });
    assert.deepEqual(spoofed, GATEWAY_SET);
  });

  test('Connection naming an identity header cannot remove the one the gateway sets', () => {
    assert.deepEqual(
      upstream(untrusted, { connection: 'x-client-id, x-request-id', 'x-client-id': 'admin' }),
      GATEWAY_SET,
    );
  });

  test('identity headers are not set for absent claims', () => {
    const withoutJti = principal({ jti: undefined });
    const headers = upstream(
      untrusted,
      { 'x-token-jti': 'forged' },
      { ...ctx, principal: withoutJti },
    );
    assert.equal(headers['x-token-jti'], undefined);
    assert.equal(headers['x-client-id'], 'client-a');
  });

  test('claim values: arrays joined by a space, numbers in decimal, other types omitted', () => {
    const policy = policyOf({
      identityHeaders: { roles: 'X-Roles', tier: 'X-Tier', flag: 'X-Flag', bad: 'X-Bad' },
    });
    const headers = policy.upstreamRequestHeaders(
      { 'x-flag': 'spoofed', x_bad: 'spoofed' },
      {
        ...ctx,
        principal: principal({ roles: ['a', 'b'], tier: 3, flag: true, bad: 'line\r\nbreak' }),
      },
    );
    assert.equal(headers['x-roles'], 'a b');
    assert.equal(headers['x-tier'], '3');
    assert.equal(headers['x-flag'], undefined);
    assert.equal(headers['x-bad'], 'line%0D%0Abreak');
  });

  test('claim values outside visible ASCII are percent-encoded, never dropped', () => {
    const headers = upstream(
      untrusted,
      {},
      {
        ...ctx,
        principal: principal({ sub: '客户-é', jti: 'j\u0000%', scope: 'a\tb' }),
      },
    );
    assert.equal(headers['x-client-id'], '%E5%AE%A2%E6%88%B7-%C3%A9');
    assert.equal(decodeURIComponent(headers['x-client-id'] as string), '客户-é');
    assert.equal(headers['x-token-jti'], 'j%00%25');
    assert.equal(headers['x-token-scope'], 'a%09b');
  });

  test('the scope header comes from the principal scope', () => {
    const headers = upstream(untrusted, {}, { ...ctx, principal: principal({ scope: 'a b c' }) });
    assert.equal(headers['x-token-scope'], 'a b c');
  });

  test('authorization is removed when forwardAuthorization is off', () => {
    const headers = upstream(noAuthorization, {
      authorization: 'Bearer abc',
      'x-kept': 'k',
    });
    assert.deepEqual(headers, { 'x-kept': 'k', ...GATEWAY_SET });
  });

  test('untrusted X-Forwarded-* and Forwarded are replaced from the connection', () => {
    const headers = upstream(untrusted, {
      'x-forwarded-for': '10.0.0.1',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'evil.example',
      'x-forwarded-port': '1',
      'x-real-ip': '10.0.0.1',
      forwarded: 'for=10.0.0.1',
      x_forwarded_for: '10.0.0.2',
    });
    assert.deepEqual(headers, GATEWAY_SET);
  });

  test('from a trusted proxy: X-Forwarded-For from the client on, proto and host kept', () => {
    const headers = upstream(trusted, {
      'x-forwarded-for': '6.6.6.6, 198.51.100.1, 10.0.0.1',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'public.example',
      'x-forwarded-prefix': '/shop',
      'x-real-ip': '6.6.6.6',
      forwarded: 'for=6.6.6.6',
      x_forwarded_for: '10.9.9.9',
    });
    assert.deepEqual(headers, {
      ...GATEWAY_SET,
      'x-forwarded-for': '198.51.100.1, 10.0.0.1, 203.0.113.7',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'public.example',
      'x-forwarded-prefix': '/shop',
      'x-real-ip': '198.51.100.1',
      forwarded: 'for=198.51.100.1;host=public.example;proto=http',
    });
  });

  test('a peer the trusted policy does not list is the client', () => {
    const headers = upstream(
      trusted,
      { 'x-forwarded-for': '198.51.100.1', 'x-forwarded-host': 'public.example' },
      { ...ctx, peerAddress: '192.0.2.9' },
    );
    assert.deepEqual(headers, {
      ...GATEWAY_SET,
      'x-forwarded-for': '192.0.2.9',
      'x-real-ip': '192.0.2.9',
      forwarded: 'for=192.0.2.9;host=api.example.com;proto=https',
    });
  });

  test('consecutive requests each get the Forwarded element of their own client, host and scheme', () => {
    const policy = policyOf();
    const sequence: [UpstreamRequestContext, string][] = [
      [ctx, 'for=203.0.113.7;host=api.example.com;proto=https'],
      [ctx, 'for=203.0.113.7;host=api.example.com;proto=https'],
      [
        { ...ctx, host: 'other.example:8443' },
        'for=203.0.113.7;host="other.example:8443";proto=https',
      ],
      [
        { ...ctx, host: 'other.example:8443', proto: 'http' },
        'for=203.0.113.7;host="other.example:8443";proto=http',
      ],
      [
        { ...ctx, peerAddress: '192.0.2.9', proto: 'http' },
        'for=192.0.2.9;host=api.example.com;proto=http',
      ],
      [{ ...ctx, host: undefined }, 'for=203.0.113.7;proto=https'],
      [ctx, 'for=203.0.113.7;host=api.example.com;proto=https'],
    ];
    for (const [context, forwarded] of sequence) {
      assert.equal(policy.upstreamRequestHeaders({}, context).forwarded, forwarded);
    }
  });

  /** [what, client address, Host, Forwarded]. */
  const forwardedCases: [string, string | undefined, string, string][] = [
    [
      'an IPv6 client',
      '2001:db8::1',
      'api.example.com',
      'for="[2001:db8::1]";host=api.example.com;proto=https',
    ],
    [
      'no peer address',
      undefined,
      'api.example.com',
      'for=unknown;host=api.example.com;proto=https',
    ],
    [
      'a host with a port',
      '192.0.2.1',
      'api.example.com:8443',
      'for=192.0.2.1;host="api.example.com:8443";proto=https',
    ],
    ['a host with a quote', '192.0.2.1', 'a"b\\c', 'for=192.0.2.1;host="a\\"b\\\\c";proto=https'],
  ];
  for (const [what, peer, host, forwarded] of forwardedCases) {
    test(`Forwarded for ${what} is ${forwarded}`, () => {
      const headers = upstream(untrusted, {}, { ...ctx, peerAddress: peer, host });
      assert.equal(headers.forwarded, forwarded);
    });
  }

  test('trusted but absent X-Forwarded-* are set from the connection', () => {
    assert.deepEqual(upstream(trusted, {}), GATEWAY_SET);
  });

  /** Every caller-written address, host, path and method field. */
  const callerHeaders = [
    'true-client-ip',
    'x-client-ip',
    'client-ip',
    'x-cluster-client-ip',
    'cf-connecting-ip',
    'fastly-client-ip',
    'x-originating-ip',
    'x-remote-ip',
    'x-remote-addr',
    'x-original-forwarded-for',
    'x-envoy-external-address',
    'x-envoy-original-path',
    'x-host',
    'x-original-host',
    'x-http-host-override',
    'x-original-uri',
    'x-http-method-override',
    'x-http-method',
    'x-method-override',
  ];
  for (const name of callerHeaders) {
    test(`${name} and its _ spellings are removed, from clients and trusted proxies`, () => {
      const under = name.replaceAll('-', '_');
      const incoming = {
        [name]: 'spoofed',
        [under]: 'spoofed',
        [name.replace('-', '_')]: 'spoofed',
      };
      assert.deepEqual(upstream(untrusted, incoming), GATEWAY_SET);
      assert.deepEqual(upstream(trusted, incoming), GATEWAY_SET);
    });
  }

  test('forwardCallerHeaders lets the named ones through, never their _ spelling', () => {
    const policy = policyOf({
      forwardCallerHeaders: ['x-original-host', 'x-http-method-override'],
    });
    const headers = upstream(policy, {
      'x-original-host': 'shop.example',
      x_original_host: 'smuggled',
      'x-http-method-override': 'PATCH',
      'x-method-override': 'TRACE',
    });
    assert.deepEqual(headers, {
      ...GATEWAY_SET,
      'x-original-host': 'shop.example',
      'x-http-method-override': 'PATCH',
    });
  });

  test('X-Forwarded-Host is omitted when the client sent no Host', () => {
    const headers = upstream(untrusted, {}, { ...ctx, host: undefined });
    assert.equal('x-forwarded-host' in headers, false);
  });

  test('an incoming x-request-id is replaced by the gateway one', () => {
    assert.equal(upstream(untrusted, { 'x-request-id': 'client-chosen' })['x-request-id'], 'req-1');
  });
});

describe('downstream response headers', () => {
  test('hop-by-hop and Connection-nominated headers are removed and x-request-id set', () => {
    const headers = untrusted.downstreamResponseHeaders(
      {
        connection: 'keep-alive, x-upstream-secret',
        'keep-alive': 'timeout=5',
        'transfer-encoding': 'chunked',
        'x-upstream-secret': 's',
        'content-type': 'text/plain',
        'set-cookie': ['a=1', 'b=2'],
        'x-request-id': 'upstream-id',
        'x-undefined': undefined,
      },
      'req-9',
    );
    assert.deepEqual(
      { ...headers },
      { 'content-type': 'text/plain', 'set-cookie': ['a=1', 'b=2'], 'x-request-id': 'req-9' },
    );
  });
});

describe('isIdentityHeader', () => {
  for (const [name, expected] of [
    ['X-Client-Id', true],
    ['x_client_id', true],
    ['X-TOKEN-SCOPE', true],
    ['x-token-jti', true],
    ['x-client-idx', false],
    ['authorization', false],
  ] as const) {
    test(`${name} is ${expected ? '' : 'not '}an identity header`, () => {
      assert.equal(untrusted.isIdentityHeader(name), expected);
    });
  }
});
