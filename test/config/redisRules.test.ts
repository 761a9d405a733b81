/**
 * The `redis` rules: one way to reach Redis (URL, Sentinel, Cluster), nodes as host:port,
 * each credential in one place, TLS files only with TLS on, and relative files resolved
 * against the configuration's directory.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import { parseRedisNode } from '../../src/config/redisRules.js';
import { validateConfig } from '../../src/config/validateConfig.js';

const BASE = '/srv/portaria';

function problems(redis: unknown, extra: Record<string, unknown> = {}): readonly string[] {
  try {
    validateConfig({ redis, ...extra }, { baseDir: BASE });
  } catch (error) {
    assert.ok(error instanceof ConfigError, `not a ConfigError: ${String(error)}`);
    return error.problems;
  }
  return [];
}

describe('redis settings', () => {
  test('a URL whose user name or password is not valid percent-encoding is a problem naming redis.url', () => {
    for (const url of ['redis://gw%zz@127.0.0.1:6379', 'redis://gw:p%@127.0.0.1:6379']) {
      assert.deepEqual(problems({ url }), [
        'redis.url: its user name or password is not valid percent-encoding (%XX)',
      ]);
    }
    assert.deepEqual(problems({ url: 'redis://g%77:p%40ss@127.0.0.1:6379' }), []);
  });

  test('Sentinel: nodes, the primary name, the sentinels own user and password file', () => {
    const config = validateConfig(
      {
        revocation: { store: 'redis' },
        redis: {
          username: 'gw',
          passwordFile: 'secrets/redis',
          sentinel: {
            masterName: 'portaria',
            nodes: ['sentinel-0:26379', '[fd00::1]:26379'],
            username: 'watcher',
            passwordFile: 'secrets/sentinel',
          },
          tls: { enabled: true, caFile: 'tls/ca.pem', serverName: 'redis.internal' },
        },
      },
      { baseDir: BASE },
    );
    assert.deepEqual(config.redis.sentinel, {
      masterName: 'portaria',
      nodes: ['sentinel-0:26379', '[fd00::1]:26379'],
      username: 'watcher',
      passwordFile: `${BASE}/secrets/sentinel`,
    });
    assert.equal(config.redis.passwordFile, `${BASE}/secrets/redis`);
    assert.equal(config.redis.tls.caFile, `${BASE}/tls/ca.pem`);
    assert.equal(config.oauth.replayStore, 'redis');
  });

  test('Cluster: seed nodes are enough for every Redis store', () => {
    const config = validateConfig(
      {
        revocation: { store: 'redis' },
        tokenLimits: { store: 'redis' },
        redis: { cluster: { nodes: ['redis-0:6379', 'redis-1:6379'] } },
      },
      { baseDir: BASE },
    );
    assert.deepEqual(config.redis.cluster.nodes, ['redis-0:6379', 'redis-1:6379']);
  });

  const cases: [string, unknown, string[]][] = [
    [
      'a URL and Sentinel nodes',
      { url: 'redis://r:6379', sentinel: { masterName: 'm', nodes: ['s:26379'] } },
      ['redis: redis.url and redis.sentinel.nodes are both set; Redis is reached one way'],
    ],
    [
      'Sentinel and Cluster nodes',
      { sentinel: { masterName: 'm', nodes: ['s:26379'] }, cluster: { nodes: ['c:6379'] } },
      [
        'redis: redis.sentinel.nodes and redis.cluster.nodes are both set; Redis is reached one way',
      ],
    ],
    [
      'Sentinel nodes without the primary name',
      { sentinel: { nodes: ['s:26379'] } },
      ['redis.sentinel.masterName: Sentinel needs the name of the primary it watches'],
    ],
    [
      'a sentinel password without Sentinel',
      { url: 'redis://r:6379', sentinel: { passwordFile: '/run/s' } },
      ['redis.sentinel.passwordFile: applies only with redis.sentinel.nodes'],
    ],
    [
      'nodes that are not host:port',
      { cluster: { nodes: ['node', 'c:0', 'c:70000', 'fd00::1:6379', 'redis://c:6379'] } },
      [0, 1, 2, 3, 4].map(
        (i) =>
          `redis.cluster.nodes[${i}]: must be host:port ([address]:port for IPv6), port 1-65535`,
      ),
    ],
    [
      'a user in the URL and in redis.username',
      { url: 'redis://gw@r:6379', username: 'other' },
      ['redis.username: redis.url carries a user name too; give it in one place'],
    ],
    [
      'TLS files with a redis:// URL',
      { url: 'redis://r:6379', tls: { caFile: '/ca.pem', serverName: 'r' } },
      [
        'redis.tls.caFile: TLS is off; set redis.tls.enabled (or a rediss:// URL)',
        'redis.tls.serverName: TLS is off; set redis.tls.enabled (or a rediss:// URL)',
      ],
    ],
    [
      'TLS enabled with a redis:// URL',
      { url: 'redis://r:6379', tls: { enabled: true } },
      ['redis.tls.enabled: redis.url is redis:// (plain); use rediss:// for TLS'],
    ],
    [
      'a client certificate without its key',
      { url: 'rediss://r:6379', tls: { certFile: '/c.pem' } },
      ['redis.tls: certFile and keyFile go together (a client certificate and its key)'],
    ],
  ];
  for (const [name, redis, expected] of cases) {
    test(`refused: ${name}`, () => {
      assert.deepEqual(problems(redis), expected);
    });
  }

  test('a Redis store without any way to Redis names the three settings', () => {
    assert.deepEqual(problems({}, { tokenLimits: { store: 'redis' } }), [
      'tokenLimits.store: "redis" needs redis.url, redis.sentinel.nodes or redis.cluster.nodes (or PORTARIA_REDIS_URL)',
    ]);
  });

  test('node spellings: a name, an IPv4 and a bracketed IPv6 address', () => {
    assert.deepEqual(parseRedisNode('redis-0.redis:6379'), { host: 'redis-0.redis', port: 6379 });
    assert.deepEqual(parseRedisNode('10.0.0.7:7000'), { host: '10.0.0.7', port: 7000 });
    assert.deepEqual(parseRedisNode('[::1]:26379'), { host: '::1', port: 26379 });
    assert.equal(parseRedisNode('::1:26379'), undefined);
  });
});
