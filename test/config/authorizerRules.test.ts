/** `mode` and `authorizer`: what an authorizer-mode configuration must hold. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import { validateConfig } from '../../src/config/validateConfig.js';

function problems(raw: unknown): readonly string[] {
  try {
    validateConfig(raw, { baseDir: '/srv/portaria' });
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.problems;
  }
  return [];
}

const proxies = { trustedProxies: ['10.0.0.0/8'] };

describe('authorizer settings', () => {
  test('routes need no upstream in mode: authorizer, and need one in the other modes', () => {
    const routes = [{ id: 'orders', prefix: '/v1/orders', scopes: ['orders:read'] }];
    assert.deepEqual(problems({ mode: 'authorizer', server: proxies, routes }), []);
    const config = validateConfig(
      { mode: 'authorizer', server: proxies, routes, upstream: { default: { scopes: ['x'] } } },
      { baseDir: '/' },
    );
    assert.equal(config.routes[0]?.upstream, null);
    assert.equal(config.upstream.default?.upstream, null);
    for (const mode of ['proxy', 'both']) {
      const found = problems({ mode, server: proxies, routes, upstream: { default: {} } });
      assert.ok(
        found.some((p) => p.startsWith('routes[0].upstream: required')),
        found.join('\n'),
      );
      assert.ok(found.some((p) => p.startsWith('upstream.default.upstream: required')));
    }
  });

  test('an authorizer mode without trusted proxies does not start', () => {
    for (const mode of ['authorizer', 'both']) {
      const found = problems({ mode });
      assert.ok(
        found.some((p) => p.startsWith('server.trustedProxies: mode: ')),
        found.join('\n'),
      );
    }
    assert.deepEqual(problems({ mode: 'proxy' }), []);
  });

  test('the decision ports differ from each other and from the public and admin ports', () => {
    const found = problems({
      mode: 'both',
      server: { ...proxies, port: 8181 },
      authorizer: { grpc: { port: 9091 } },
    });
    assert.ok(
      found.includes('authorizer.port: must differ from server.port (8181)'),
      found.join('\n'),
    );
    assert.ok(found.includes('authorizer.grpc.port: must differ from admin.port (9091)'));
    // A disabled gRPC listener takes no port.
    assert.deepEqual(
      problems({
        mode: 'both',
        server: proxies,
        authorizer: { grpc: { enabled: false, port: 9091 } },
      }),
      [],
    );
  });

  test('cacheDecisions is off by default and bounded', () => {
    const config = validateConfig({}, { baseDir: '/' });
    assert.equal(config.authorizer.cacheDecisions.enabled, false);
    const found = problems({ authorizer: { cacheDecisions: { maxAgeSeconds: 301 } } });
    assert.ok(
      found.some((p) => p.startsWith('authorizer.cacheDecisions.maxAgeSeconds')),
      found.join('\n'),
    );
  });

  test('the original method and URI headers are header names, and two', () => {
    assert.ok(problems({ authorizer: { originalUriHeader: 'X Bad' } }).length > 0);
    const found = problems({
      mode: 'authorizer',
      server: proxies,
      authorizer: { originalMethodHeader: 'X-Original', originalUriHeader: 'x-original' },
    });
    assert.ok(found.some((p) => p.startsWith('authorizer.originalUriHeader: must differ')));
  });
});
