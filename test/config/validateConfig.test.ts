import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import { type LoadOptions, loadConfig } from '../../src/config/loadConfig.js';
import { validateConfig } from '../../src/config/validateConfig.js';

const BASE = '/srv/portaria';

/** The problems of the ConfigError `run` throws (fails if it throws anything else). */
async function problemsOf(run: () => unknown): Promise<readonly string[]> {
  try {
    await run();
  } catch (error) {
    assert.ok(error instanceof ConfigError, `not a ConfigError: ${String(error)}`);
    return error.problems;
  }
  assert.fail('no ConfigError was thrown');
}

function validate(raw: unknown) {
  return validateConfig(raw, { baseDir: BASE });
}

const route = (id: string, prefix: string, upstream = 'http://orders.internal:8080') => ({
  id,
  prefix,
  upstream,
});

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-config-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Writes `text` as `<dir>/etc/portaria.yaml` and loads it from a different cwd. */
async function loadText(t: TestContext, text: string, options: Partial<LoadOptions> = {}) {
  const dir = await tempDir(t);
  await mkdir(join(dir, 'etc'));
  await mkdir(join(dir, 'cwd'));
  const file = join(dir, 'etc', 'portaria.yaml');
  await writeFile(file, text);
  return {
    dir,
    file,
    load: () => loadConfig({ file, env: {}, cwd: join(dir, 'cwd'), ...options }),
  };
}

describe('validateConfig', () => {
  test('schema problems are all reported at once, each with its path', async () => {
    const problems = await problemsOf(() =>
      validate({
        extra: true,
        server: { port: '8080', frob: 1 },
        clockSkewSeconds: -1,
        token: { algorithm: 'HS256' },
        routes: [{ prefix: '/a', upstream: 'http://a' }],
        identityHeaders: { sub: 'X Client', 'bad key': 'X-Foo' },
        log: { level: 'loud' },
        metrics: { processMetricsPrefix: 'portaria-' },
      }),
    );
    assert.deepEqual(problems, [
      'extra: unknown setting',
      'server.frob: unknown setting',
      'server.port: must be integer',
      'clockSkewSeconds: must be >= 0',
      'token.algorithm: must be one of "ES256", "EdDSA", "RS256", "PS256"',
      'routes[0].id: is required',
      'identityHeaders["bad key"]: is not a valid name (must match pattern "^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")',
      'identityHeaders.sub: must match pattern "^[A-Za-z0-9-]{1,64}$"',
      'metrics.processMetricsPrefix: must match pattern "^([a-zA-Z_:][a-zA-Z0-9_:]*)?$"',
      'log.level: must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent"',
    ]);
  });

  test('rule problems are all reported at once, each with its path', async () => {
    const problems = await problemsOf(() =>
      validate({
        issuer: 'ftp://portaria',
        routes: [
          route('orders', '/v1/orders', 'ftp://orders.internal'),
          route('orders', '/v1/a', 'http://user:pass@orders.internal'),
          route('b', '/a/', 'http://orders.internal/?debug=1'),
          route('c', '/a//b', 'http://orders.internal/#top'),
          route('d', '/a/../b', 'orders.internal'),
          route('e', '/a%2fb'),
          route('f', '/V1/Orders'),
        ],
        upstream: { default: { upstream: 'https://user@legacy.internal' } },
        identityHeaders: { sub: 'Authorization', scope: 'X-Identity', jti: 'x-identity' },
      }),
    );
    assert.deepEqual(problems, [
      'issuer: must use http: or https:',
      'routes[0].upstream: must use http: or https:',
      'routes[1].id: duplicate route id "orders"',
      'routes[1].upstream: must not carry credentials',
      'routes[2].prefix: must not end with "/"',
      'routes[2].upstream: must not have a query or fragment',
      'routes[3].prefix: must not contain "//"',
      'routes[3].upstream: must not have a query or fragment',
      'routes[4].prefix: must not contain dot segments',
      'routes[4].upstream: must be an absolute URL',
      'routes[5].prefix: must not contain "%", "\\", "?", "#" or spaces',
      'routes[6].prefix: duplicate prefix "/V1/Orders" (prefixes ignore case)',
      'upstream.default.upstream: must not carry credentials',
      'identityHeaders.sub: "Authorization" is a header the gateway manages',
      'identityHeaders.jti: "x-identity" is also used for claim "scope"',
    ]);
  });

  test('an issuer key set fetched over plain http is refused unless on loopback or allowed', async () => {
    const issuer = (id: string, jwksUri: string, extra: Record<string, unknown> = {}) => ({
      id,
      issuer: `https://${id}.example`,
      audiences: ['api'],
      jwksUri,
      ...extra,
    });
    const problems = await problemsOf(() =>
      validate({
        issuers: [
          issuer('a', 'http://idp.example/jwks'),
          issuer('b', 'http://10.0.0.7:8080/jwks'),
          issuer('c', 'http://idp.internal/jwks', { allowPlainHttp: true }),
          issuer('d', 'http://127.0.0.1:9000/jwks'),
          issuer('e', 'http://[::1]:9000/jwks'),
          issuer('f', 'http://localhost/jwks'),
          issuer('g', 'https://idp.example/jwks'),
        ],
      }),
    );
    assert.deepEqual(problems, [
      'issuers[0].jwksUri: must use https (the key set decides whom the gateway trusts); for a network you trust set issuers[0].allowPlainHttp: true',
      'issuers[1].jwksUri: must use https (the key set decides whom the gateway trusts); for a network you trust set issuers[1].allowPlainHttp: true',
    ]);
  });

  test('schema and rule problems are reported together, in one run', async () => {
    const problems = await problemsOf(() =>
      validate({
        issuer: 'ftp://portaria',
        server: { port: 'http' },
        routes: [route('a', '/a'), route('a', '/b/'), { id: 'c', prefix: 7, upstream: 'x' }],
      }),
    );
    assert.deepEqual(problems, [
      'server.port: must be integer',
      'routes[2].prefix: must be string',
      'issuer: must use http: or https:',
      'routes[1].id: duplicate route id "a"',
      'routes[1].prefix: must not end with "/"',
      'routes[2].upstream: must be an absolute URL',
    ]);
  });

  test('oauth: paths must be canonical, distinct and not already answered; redis replay needs a URL', async () => {
    const problems = await problemsOf(() =>
      validate({
        oauth: {
          tokenPath: '/oauth2/../token',
          revocationPath: '/v1/openapi.json',
          introspectionPath: '/v1/openapi.json',
          assertionAudiences: ['not a url'],
          replayStore: 'redis',
        },
      }),
    );
    assert.deepEqual(problems, [
      'oauth.tokenPath: must match pattern "^(/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)+$"',
      'oauth.revocationPath: /v1/openapi.json is a path the gateway already answers',
      'oauth.introspectionPath: /v1/openapi.json is a path the gateway already answers',
      'oauth.introspectionPath: same path as oauth.revocationPath',
      'oauth.assertionAudiences[0]: must be an absolute URL',
      'oauth.replayStore: "redis" needs redis.url, redis.sentinel.nodes or redis.cluster.nodes (or PORTARIA_REDIS_URL)',
    ]);
  });

  test('oauth.replayStore follows the revocation store by default', () => {
    const shared = validate({
      revocation: { store: 'redis' },
      redis: { url: 'redis://127.0.0.1:6379' },
    });
    assert.equal(shared.oauth.replayStore, 'redis');
    assert.equal(validate({}).oauth.replayStore, 'local');
  });

  test('a value of the wrong type is reported by the schema only, not again by a rule', async () => {
    const problems = await problemsOf(() =>
      validate({
        issuers: [{ id: 'a', issuer: 'https://a.example', audiences: ['api'], keyFile: 5 }, null],
        redis: null,
        revocation: { store: 'redis' },
      }),
    );
    assert.deepEqual(problems, [
      'issuers[0].keyFile: must be string',
      'issuers[1]: must be object',
      'redis: must be object',
    ]);
  });

  test('settings of the wrong type are schema problems, never a crash of the rule checks', async () => {
    const problems = await problemsOf(() =>
      validate({
        issuer: 5,
        routes: 'all',
        upstream: { default: 'http://a' },
        identityHeaders: ['X-A'],
        issuers: [7, null],
        redis: { url: 5 },
        tokenLimits: { failedSecretBackoff: 3 },
        server: [],
        admin: 'x',
      }),
    );
    assert.ok(problems.length > 0);
    for (const problem of problems) {
      assert.doesNotMatch(problem, /TypeError|undefined|Cannot read/);
    }
    assert.ok(problems.includes('routes: must be array'), problems.join('\n'));
    assert.ok(problems.includes('issuer: must be string'), problems.join('\n'));
  });

  const managedHeaders = ['Authorization', 'host', 'X-Forwarded-For', 'X-Request-Id', 'Cookie'];
  for (const header of managedHeaders) {
    test(`an identity header named ${header} is refused`, async () => {
      assert.deepEqual(await problemsOf(() => validate({ identityHeaders: { sub: header } })), [
        `identityHeaders.sub: "${header}" is a header the gateway manages`,
      ]);
    });
  }

  const oldTrust: [string, unknown][] = [
    ['true', true],
    ['false', false],
    ['"yes"', 'yes'],
  ];
  for (const [name, value] of oldTrust) {
    test(`server.trustForwardedHeaders: ${name} is refused, naming server.trustedProxies`, async () => {
      assert.deepEqual(
        await problemsOf(() => validate({ server: { trustForwardedHeaders: value } })),
        [
          'server.trustForwardedHeaders: replaced by server.trustedProxies, the addresses or CIDRs of the proxies in front of the gateway (e.g. [10.0.0.0/8]); remove trustForwardedHeaders (false is trustedProxies: [])',
        ],
      );
    });
  }

  test('server.trustedProxies takes addresses, CIDRs and range names, and refuses the rest', async () => {
    const good = ['10.0.0.0/8', '192.0.2.7', 'fd00::/8', '::1', 'loopback', 'uniquelocal'];
    assert.deepEqual(validate({ server: { trustedProxies: good } }).server.trustedProxies, good);
    assert.deepEqual(
      await problemsOf(() =>
        validate({ server: { trustedProxies: ['10.0.0.0/8', 'lb.internal', '10.0.0.0/40', 7] } }),
      ),
      [
        'server.trustedProxies[3]: must be string',
        'server.trustedProxies[1]: "lb.internal" is not an IP address, a CIDR (10.0.0.0/8, fd00::/8) or one of loopback, linklocal, uniquelocal',
        'server.trustedProxies[2]: "10.0.0.0/40" is not an IP address, a CIDR (10.0.0.0/8, fd00::/8) or one of loopback, linklocal, uniquelocal',
      ],
    );
  });

  test('forwardCallerHeaders takes removed caller headers in any case and _ spelling, lowercased', () => {
    const config = validate({
      forwardCallerHeaders: ['CF-Connecting-IP', 'x_original_host', 'X-Original-Host'],
    });
    assert.deepEqual(config.forwardCallerHeaders, ['cf-connecting-ip', 'x-original-host']);
  });

  test('forwardCallerHeaders refuses a name that is not a removed caller header', async () => {
    const problems = await problemsOf(() =>
      validate({ forwardCallerHeaders: ['X-Forwarded-For', 'X-Client-IP', 'X-Client-Id'] }),
    );
    assert.equal(problems.length, 2);
    assert.match(
      problems[0] as string,
      /^forwardCallerHeaders\[0\]: "X-Forwarded-For" is not a header the gateway removes \(one of true-client-ip, x-client-ip, .*x-method-override\)$/,
    );
    assert.match(problems[1] as string, /^forwardCallerHeaders\[2\]: "X-Client-Id" is not/);
  });

  test('the route id "default" is reserved for upstream.default', async () => {
    assert.deepEqual(await problemsOf(() => validate({ routes: [route('default', '/x')] })), [
      'routes: the id "default" is reserved for upstream.default',
    ]);
  });

  const samePorts: [string, Record<string, unknown>][] = [
    ['on the same host', { server: { port: 8080, host: '127.0.0.1' }, admin: { port: 8080 } }],
    [
      'on the default hosts (0.0.0.0 covers 127.0.0.1)',
      { server: { port: 8080 }, admin: { port: 8080 } },
    ],
  ];
  for (const [name, settings] of samePorts) {
    test(`an admin port equal to the public port is refused ${name}`, async () => {
      assert.deepEqual(await problemsOf(() => validate(settings)), [
        'admin.port: must differ from server.port (the admin surface is never public)',
      ]);
    });
  }

  test('port 0 for both listeners is allowed (each gets a free port)', () => {
    const config = validate({ server: { port: 0 }, admin: { port: 0 } });
    assert.equal(config.server.port, 0);
    assert.equal(config.admin.port, 0);
  });

  test('server.workers takes 1 to 64 or "auto", and refuses the rest with one clear problem', async () => {
    for (const workers of [1, 2, 64, 'auto']) {
      assert.equal(validate({ server: { workers } }).server.workers, workers);
    }
    const problem =
      'server.workers: must be a whole number from 1 to 64, or "auto" (the CPUs available to the process)';
    for (const workers of [0, -1, 65, 1.5, 'lots', 'AUTO', '2', '', null, true, [2]]) {
      assert.deepEqual(
        await problemsOf(() => validate({ server: { workers } })),
        [problem],
        `workers: ${JSON.stringify(workers)}`,
      );
    }
  });

  test('an empty config gets every default', () => {
    assert.deepEqual(validate({}), {
      server: {
        host: '0.0.0.0',
        port: 8080,
        headersTimeoutMs: 10_000,
        requestTimeoutMs: 30_000,
        keepAliveTimeoutMs: 5_000,
        maxHeaderBytes: 16_384,
        maxHeaderLines: 100,
        shutdownGraceMs: 30_000,
        trustedProxies: [],
        closeWebSocketsAtTokenExpiry: true,
        halfClosedRequests: 'answer',
        workers: 1,
        tls: {
          enabled: false,
          certFile: null,
          keyFile: null,
          minVersion: 'TLSv1.2',
          policy: 'default',
          clientCertificates: 'off',
        },
      },
      admin: { host: '127.0.0.1', port: 9091, tokenFile: null },
      clientCertificate: {
        source: 'none',
        caFiles: [],
        crlFiles: [],
        header: { format: 'rfc9440', name: 'client-cert' },
      },
      issuer: 'http://localhost:8080',
      audience: 'portaria',
      clockSkewSeconds: 60,
      token: {
        lifetimeSeconds: 3600,
        algorithm: 'ES256',
        responseFields: 'reference',
        bodyLimitBytes: 16_384,
      },
      verify: { cacheSize: 10_000 },
      keys: { dir: `${BASE}/data/keys`, jwksMaxAgeSeconds: 300 },
      issuers: [],
      reload: { enabled: true, pollIntervalMs: 5000 },
      revocation: {
        store: 'local',
        file: `${BASE}/data/revocations.log`,
        maxSyncLagSeconds: 30,
        whenStale: { safe: 'admit', unsafe: 'refuse' },
        whileRedisDown: 'queue',
        queueFile: `${BASE}/data/revocations-pending.log`,
      },
      redis: {
        url: null,
        username: null,
        passwordFile: null,
        tls: { enabled: false, caFile: null, certFile: null, keyFile: null, serverName: null },
        sentinel: { masterName: null, nodes: [], username: null, passwordFile: null },
        cluster: { nodes: [] },
        keyPrefix: 'portaria:',
        connectTimeoutMs: 2000,
        commandTimeoutMs: 1000,
      },
      quotas: {
        store: 'local',
        whenRedisDown: 'open',
        headers: 'always',
        maxTrackedKeys: 100_000,
        policies: {},
      },
      tokenLimits: {
        store: 'local',
        maxTrackedKeys: 100_000,
        perAddress: { enabled: true, ratePerSecond: 5, burst: 20 },
        perClient: { enabled: true, ratePerSecond: 10, burst: 50 },
        failedSecretBackoff: {
          enabled: true,
          freeFailures: 3,
          baseDelayMs: 1000,
          maxDelayMs: 300_000,
          forgetAfterSeconds: 900,
        },
      },
      clients: { file: `${BASE}/data/clients.json` },
      oauth: {
        enabled: true,
        tokenPath: '/oauth2/token',
        revocationPath: '/oauth2/revoke',
        introspectionPath: '/oauth2/introspect',
        assertionMaxLifetimeSeconds: 300,
        assertionAudiences: [],
        replayStore: 'local',
        replayStoreMaxEntries: 500_000,
      },
      routes: [],
      upstream: { default: null, timeoutMs: 30_000, connections: 128 },
      identityHeaders: { sub: 'X-Client-Id', scope: 'X-Token-Scope', jti: 'X-Token-Jti' },
      forwardAuthorization: true,
      forwardCallerHeaders: [],
      problemTypeBase: 'urn:portaria:problem:',
      profile: 'none',
      dpop: {
        enabled: false,
        algorithms: ['ES256', 'ES384', 'EdDSA', 'PS256', 'RS256'],
        proofWindowSeconds: 60,
        nonces: { enabled: false, secretFile: null, lifetimeSeconds: 300 },
      },
      mode: 'proxy',
      authorizer: {
        host: '0.0.0.0',
        port: 8181,
        grpc: { enabled: true, port: 9191 },
        originalMethodHeader: 'X-Original-Method',
        originalUriHeader: 'X-Original-URI',
        cacheDecisions: { enabled: false, maxAgeSeconds: 10 },
      },
      metrics: { maxClientLabels: 100, processMetricsPrefix: '' },
      log: { level: 'info', pretty: false },
      tracing: { enabled: false },
      demo: false,
    });
    assert.deepEqual(validate(null), validate({}));
  });

  test('route and default-upstream timeouts default to upstream.timeoutMs', () => {
    const config = validate({
      routes: [route('a', '/a'), { ...route('b', '/b'), timeoutMs: 250 }],
      upstream: { timeoutMs: 1234, default: { upstream: 'http://legacy.internal' } },
    });
    assert.deepEqual(
      config.routes.map((r) => [r.id, r.timeoutMs, r.scopes]),
      [
        ['a', 1234, []],
        ['b', 250, []],
      ],
    );
    assert.deepEqual(config.upstream.default, {
      upstream: 'http://legacy.internal',
      scopes: [],
      timeoutMs: 1234,
    });
  });

  test('the result is deeply frozen and the input is left untouched', () => {
    const raw = {
      routes: [{ ...route('a', '/a'), scopes: ['orders:read'] }],
      upstream: { default: { upstream: 'http://legacy.internal' } },
    };
    const before = structuredClone(raw);
    const config = validate(raw);
    assert.deepEqual(raw, before);
    const [first] = config.routes;
    const fallback = config.upstream.default;
    assert.ok(first && fallback);
    const writes: [string, () => void][] = [
      ['server.port', () => Object.assign(config.server, { port: 1 })],
      ['issuer', () => Object.assign(config, { issuer: 'x' })],
      ['routes', () => (config.routes as unknown[]).push({})],
      ['routes[0].scopes', () => (first.scopes as string[]).push('x')],
      ['routes[0].timeoutMs', () => Object.assign(first, { timeoutMs: 1 })],
      ['upstream.default', () => Object.assign(fallback, { upstream: 'x' })],
      ['identityHeaders', () => Object.assign(config.identityHeaders, { iss: 'X-Iss' })],
      ['log', () => delete (config.log as { level?: string }).level],
    ];
    for (const [path, write] of writes) assert.throws(write, TypeError, path);
    assert.equal(config.server.port, 8080);
    assert.equal(config.identityHeaders.iss, undefined);
  });
});

describe('loadConfig', () => {
  test('relative keys.dir and clients.file resolve against the config file directory', async (t) => {
    const { dir, load } = await loadText(
      t,
      'keys:\n  dir: keys\nclients:\n  file: ../shared/clients.json\n',
    );
    const config = await load();
    assert.equal(config.keys.dir, join(dir, 'etc', 'keys'));
    assert.equal(config.clients.file, join(dir, 'shared', 'clients.json'));
  });

  test('absolute paths are kept as written', async (t) => {
    const { load } = await loadText(
      t,
      'keys:\n  dir: /var/lib/portaria/keys\nclients:\n  file: /etc/portaria/clients.json\n',
    );
    const config = await load();
    assert.equal(config.keys.dir, '/var/lib/portaria/keys');
    assert.equal(config.clients.file, '/etc/portaria/clients.json');
  });

  test('environment overrides apply on top of the file', async (t) => {
    const { dir, load } = await loadText(t, 'server:\n  port: 8000\nlog:\n  level: warn\n', {
      env: {
        PORTARIA_SERVER__PORT: '8443',
        PORTARIA_ADMIN__PORT: '9443',
        PORTARIA_KEYS_DIR: '/run/keys',
        PORTARIA_CLIENTS_FILE: 'clients.json',
        PORTARIA_LOG_LEVEL: 'error',
      },
    });
    const config = await load();
    assert.equal(config.server.port, 8443);
    assert.equal(config.admin.port, 9443);
    assert.equal(config.keys.dir, '/run/keys');
    assert.equal(config.clients.file, join(dir, 'etc', 'clients.json'));
    assert.equal(config.log.level, 'error');
  });

  test('an empty environment variable is ignored', async (t) => {
    const { load } = await loadText(t, 'server:\n  port: 8000\n', {
      env: { PORTARIA_SERVER__PORT: '' },
    });
    assert.equal((await load()).server.port, 8000);
  });

  test('an override into a section the file gives as a non-mapping is a problem, not a silent fix', async (t) => {
    const { load } = await loadText(t, 'server: "host=10.0.0.1 port=80"\nlog: [debug]\n', {
      env: { PORTARIA_SERVER__PORT: '9000', PORTARIA_LOG_LEVEL: 'warn' },
    });
    assert.deepEqual(await problemsOf(load), [
      'server: must be a mapping (PORTARIA_SERVER__PORT cannot apply)',
      'log: must be a mapping (PORTARIA_LOG_LEVEL cannot apply)',
      'server: must be object',
      'log: must be object',
    ]);
  });

  test("a refused environment value and the file's own problems are reported together", async (t) => {
    const { load } = await loadText(
      t,
      'frob: 1\nroutes:\n  - {id: a, prefix: /a/, upstream: "http://a"}\n',
      {
        env: { PORTARIA_SERVER__PORT: 'eighty' },
      },
    );
    assert.deepEqual(await problemsOf(load), [
      'server.port (PORTARIA_SERVER__PORT): must be an integer',
      'frob: unknown setting',
      'routes[0].prefix: must not end with "/"',
    ]);
  });

  test('a Redis password in the configuration file is refused, in either URL form', async (t) => {
    const refusal =
      'redis.url: must not carry a password in the configuration file (give it in redis.passwordFile, or the whole URL in PORTARIA_REDIS_URL)';
    for (const url of ['redis://:hunter2@redis:6379/0', 'redis://redis:6379/0?password=hunter2']) {
      const { load } = await loadText(t, `redis:\n  url: "${url}"\n`);
      const problems = await problemsOf(load);
      assert.deepEqual(problems, [refusal], url);
      assert.ok(!problems.join('\n').includes('hunter2'), 'the password is not echoed');
    }
    // A user name alone (Redis ACL) is no secret.
    const { load } = await loadText(t, 'redis:\n  url: "redis://portaria@redis:6379/0"\n');
    assert.equal((await load()).redis.url, 'redis://portaria@redis:6379/0');
  });

  test('a Redis URL with its password may come from the environment, but not with a passwordFile too', async (t) => {
    const url = 'rediss://portaria:hunter2@redis:6380/0';
    const { load } = await loadText(t, 'redis:\n  url: "redis://redis:6379/0"\n', {
      env: { PORTARIA_REDIS_URL: url },
    });
    assert.equal((await load()).redis.url, url);
    const both = await loadText(t, 'redis:\n  passwordFile: /run/secrets/redis\n', {
      env: { PORTARIA_REDIS_URL: url },
    });
    assert.deepEqual(await problemsOf(both.load), [
      'redis.passwordFile: redis.url carries a password too; give it in one place',
    ]);
  });

  test('PORTARIA_CONFIG names the file when --config is not given', async (t) => {
    const { file, dir } = await loadText(t, 'audience: from-env-file\n');
    const config = await loadConfig({ env: { PORTARIA_CONFIG: file }, cwd: join(dir, 'cwd') });
    assert.equal(config.audience, 'from-env-file');
  });

  const badPorts = ['8080x', '80.5', '1e3', ' 80', '0x50'];
  for (const value of badPorts) {
    test(`PORTARIA_SERVER__PORT=${JSON.stringify(value)} is reported with its setting path`, async (t) => {
      const { load } = await loadText(t, '', { env: { PORTARIA_SERVER__PORT: value } });
      assert.deepEqual(await problemsOf(load), [
        'server.port (PORTARIA_SERVER__PORT): must be an integer',
      ]);
    });
  }

  test('an environment value the schema refuses is reported with the setting path', async (t) => {
    const { load } = await loadText(t, '', {
      env: { PORTARIA_ADMIN__PORT: '70000', PORTARIA_LOG_LEVEL: 'loud' },
    });
    assert.deepEqual(await problemsOf(load), [
      'admin.port (PORTARIA_ADMIN__PORT): must be <= 65535',
      'log.level (PORTARIA_LOG_LEVEL): must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent"',
    ]);
  });

  test('YAML with a duplicate key is refused', async (t) => {
    const { file, load } = await loadText(t, 'server:\n  port: 1\n  port: 2\n');
    const problems = await problemsOf(load);
    assert.equal(problems.length, 1);
    assert.match(problems[0] as string, /^.+: Map keys must be unique at line 3, column 3/);
    assert.ok(problems[0]?.startsWith(`${file}: `));
  });

  const yamlTraps: [string, string, RegExp][] = [
    ['an unknown tag', 'server:\n  host: !custom 127.0.0.1\n', /Unresolved tag: !custom at line 2/],
    [
      'an alias bomb',
      'a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n',
      /Excessive alias count/,
    ],
    ['a list as a key', '? [a, b]\n: 1\n', /line 1: a key must be a plain value/],
  ];
  for (const [name, text, problem] of yamlTraps) {
    test(`YAML with ${name} is refused as a configuration problem naming the file`, async (t) => {
      const { file, load } = await loadText(t, text);
      const problems = await problemsOf(load);
      assert.equal(problems.length, 1, problems.join('; '));
      assert.match(problems[0] as string, problem);
      assert.ok(problems[0]?.startsWith(`${file}: `));
    });
  }

  const notMappings: [string, string][] = [
    ['a list', '- server\n- admin\n'],
    ['a scalar', 'portaria\n'],
  ];
  for (const [name, text] of notMappings) {
    test(`YAML that is ${name} at the top level is refused`, async (t) => {
      const { file, load } = await loadText(t, text);
      assert.deepEqual(await problemsOf(load), [
        `${file}: the top level must be a mapping of settings`,
      ]);
    });
  }

  test('an empty file means every default', async (t) => {
    const { load } = await loadText(t, '# nothing set\n');
    assert.equal((await load()).server.port, 8080);
  });

  test('a missing file is reported with its path', async (t) => {
    const dir = await tempDir(t);
    const file = join(dir, 'missing.yaml');
    assert.deepEqual(await problemsOf(() => loadConfig({ file, env: {}, cwd: dir })), [
      `${file}: cannot read the configuration file (ENOENT)`,
    ]);
  });

  test("the demo's issuer is the address it listens on: 127.0.0.1 and its port, unless PORTARIA_ISSUER says otherwise", async () => {
    const demo = (env: Record<string, string>) =>
      loadConfig({ env, cwd: BASE, demo: true, demoUpstream: 'http://127.0.0.1:9' });
    assert.equal((await demo({})).issuer, 'http://127.0.0.1:8080');
    assert.equal((await demo({ PORTARIA_SERVER__PORT: '18080' })).issuer, 'http://127.0.0.1:18080');
    assert.equal((await demo({ PORTARIA_SERVER__PORT: '18081' })).issuer, 'http://127.0.0.1:18081');
    assert.equal(
      (await demo({ PORTARIA_ISSUER: 'https://demo.example' })).issuer,
      'https://demo.example',
    );
    // A configuration file keeps the schema's default.
    const dir = await mkdtemp(join(tmpdir(), 'portaria-issuer-'));
    try {
      await writeFile(join(dir, 'portaria.yaml'), 'server:\n  port: 18082\n');
      const file = await loadConfig({ file: join(dir, 'portaria.yaml'), env: {}, cwd: dir });
      assert.equal(file.issuer, 'http://localhost:8080');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('no config file and no demo is a ConfigError naming --config', async () => {
    const problems = await problemsOf(() => loadConfig({ env: {}, cwd: BASE }));
    assert.equal(problems.length, 1);
    assert.match(problems[0] as string, /--config/);
    assert.match(problems[0] as string, /PORTARIA_CONFIG/);
  });
});
