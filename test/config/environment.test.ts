/**
 * Settings from the environment (docs/configuration.md, Environment): every leaf setting of
 * the schema has the variable `PORTARIA_` + its path in UPPER_SNAKE_CASE with `__` between
 * levels. The list of settings is walked from the schema here, independently of the
 * loader, and the names are built by the documented rule, so a setting added to the
 * schema is covered without touching this file.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import { loadConfig } from '../../src/config/loadConfig.js';
import { configSchema } from '../../src/config/schema.js';

type Node = Readonly<Record<string, unknown>>;

/** The documented rule, written out again: `tokenLimits.perAddress` → `TOKEN_LIMITS__PER_ADDRESS`. */
function documentedName(path: readonly string[]): string {
  return `PORTARIA_${path.map((key) => key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('__')}`;
}

/** Every leaf: a setting that is not a section of named sub-settings. */
function leaves(node: Node, path: string[] = []): { path: string[]; node: Node }[] {
  const properties = node.properties as Record<string, Node> | undefined;
  if (path.length > 0 && (node.type !== 'object' || properties === undefined)) {
    return [{ path, node }];
  }
  return Object.entries(properties ?? {}).flatMap(([key, child]) => leaves(child, [...path, key]));
}

/** Values to try for a setting, as [variable text, what the loaded setting must contain]. */
function candidates(node: Node): [string, unknown][] {
  const def = node.default;
  const type = Array.isArray(node.type) ? node.type.find((t) => t !== 'null') : node.type;
  if (Array.isArray(node.enum)) {
    return node.enum.filter((v) => v !== def).map((v) => [String(v), v]);
  }
  if (type === 'boolean') return [[String(!def), !def]];
  if (type === 'integer' || type === 'number') {
    const min = typeof node.minimum === 'number' ? node.minimum : 0;
    const max = typeof node.maximum === 'number' ? node.maximum : 1_000_000;
    const base = typeof def === 'number' ? def : min;
    return [base + 1, base - 1, min, max, min + 1]
      .filter(
        (v) => v >= min && v <= max && v !== def && (type === 'number' || Number.isInteger(v)),
      )
      .map((v) => [String(v), v]);
  }
  if (type === 'string') {
    // An origin last: a setting that takes no path (oauth.mtlsBaseUrl).
    return [
      'envset',
      'https://env.example/x',
      'redis://127.0.0.1:6390/0',
      '/tmp/env-set',
      'https://env.example',
    ].map((v) => [v, v]);
  }
  if (type === 'array') {
    const items = (node.items ?? {}) as Node;
    if (Array.isArray(items.enum)) {
      const chosen = items.enum.filter((v) => !(def as unknown[] | undefined)?.includes(v));
      // Every value is in the default: a shorter list is the change.
      const value = chosen.length > 0 ? chosen : items.enum.slice(0, 1);
      return [[value.join(','), value]];
    }
    if (items.type === 'object') {
      return [
        '[{"id":"envroute","prefix":"/env","upstream":"http://127.0.0.1:9"}]',
        '[{"id":"env","issuer":"https://issuer.example","audiences":["api"],"jwksUri":"https://issuer.example/jwks"}]',
      ].map((v) => [v, JSON.parse(v)]);
    }
    return [
      ['10.0.0.0/8, 127.0.0.1', ['10.0.0.0/8', '127.0.0.1']],
      ['x-client-ip,x-host', ['x-client-ip', 'x-host']],
      ['redis-0:6379,redis-1:6379', ['redis-0:6379', 'redis-1:6379']],
      ['["env:a","env:b"]', ['env:a', 'env:b']],
      [
        'https://env.example/a,https://env.example/b',
        ['https://env.example/a', 'https://env.example/b'],
      ],
    ];
  }
  // Maps and nullable objects: JSON.
  return [
    '{"sub":"X-Env-Sub"}',
    '{"upstream":"http://127.0.0.1:9"}',
    '{"envpolicy":{"quota":{"limit":5,"window":"day","timeZone":"UTC"},"per":"client","claim":null}}',
  ].map((v) => [v, JSON.parse(v)]);
}

/** True when every member `expected` names is in `actual` (defaults fill in the rest). */
function holds(actual: unknown, expected: unknown, dir: string): boolean {
  if (typeof expected === 'string' && typeof actual === 'string') {
    return actual === expected || actual === resolve(dir, expected);
  }
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      actual.length === expected.length &&
      expected.every((e, i) => holds(actual[i], e, dir))
    );
  }
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null) return false;
    return Object.entries(expected).every(([k, v]) =>
      holds((actual as Record<string, unknown>)[k], v, dir),
    );
  }
  return actual === expected;
}

function at(config: unknown, path: readonly string[]): unknown {
  let value = config;
  for (const key of path) value = (value as Record<string, unknown>)[key];
  return value;
}

async function configDir(t: TestContext, text = ''): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-env-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'cwd'));
  const file = join(dir, 'portaria.yaml');
  await writeFile(file, text);
  return { dir, file };
}

async function problemsOf(run: () => Promise<unknown>): Promise<readonly string[]> {
  try {
    await run();
  } catch (error) {
    assert.ok(error instanceof ConfigError, `not a ConfigError: ${String(error)}`);
    return error.problems;
  }
  return assert.fail('no ConfigError was thrown');
}

const TLS_COMPANIONS: Readonly<Record<string, string>> = {
  PORTARIA_SERVER__TLS__ENABLED: 'true',
  PORTARIA_SERVER__TLS__CERT_FILE: '/tmp/env-server.pem',
  PORTARIA_SERVER__TLS__KEY_FILE: '/tmp/env-server-key.pem',
};

/** Settings another one may need beside it, tried in turn (a Redis store needs Redis, …). */
const COMPANIONS: readonly Record<string, string>[] = [
  {},
  // mode: authorizer or both answers the proxies it trusts only (docs/authorizer.md).
  { PORTARIA_SERVER__TRUSTED_PROXIES: '127.0.0.1' },
  { PORTARIA_REDIS__URL: 'redis://127.0.0.1:6390/0' },
  {
    PORTARIA_REDIS__URL: 'rediss://127.0.0.1:6390/0',
    PORTARIA_REDIS__TLS__CERT_FILE: '/tmp/env-client.pem',
    PORTARIA_REDIS__TLS__KEY_FILE: '/tmp/env-client-key.pem',
  },
  {
    PORTARIA_REDIS__SENTINEL__NODES: 'sentinel-0:26379',
    PORTARIA_REDIS__SENTINEL__MASTER_NAME: 'm',
  },
  TLS_COMPANIONS,
  {
    ...TLS_COMPANIONS,
    PORTARIA_SERVER__TLS__CLIENT_CERTIFICATES: 'request',
    PORTARIA_CLIENT_CERTIFICATE__SOURCE: 'tls',
    PORTARIA_CLIENT_CERTIFICATE__CA_FILES: '/tmp/env-ca.pem',
  },
  // profile: fapi-br (docs/fapi.md) holds the algorithm, the certificates and TLS to it.
  {
    ...TLS_COMPANIONS,
    PORTARIA_SERVER__TLS__POLICY: 'fapi',
    PORTARIA_SERVER__TLS__CLIENT_CERTIFICATES: 'request',
    PORTARIA_CLIENT_CERTIFICATE__SOURCE: 'tls',
    PORTARIA_CLIENT_CERTIFICATE__CA_FILES: '/tmp/env-ca.pem',
    PORTARIA_TOKEN__ALGORITHM: 'PS256',
  },
];

describe('settings from the environment', () => {
  const all = leaves(configSchema as unknown as Node);

  test('the schema has settings at every depth (the walk found them)', () => {
    const names = all.map((l) => documentedName(l.path));
    assert.ok(names.includes('PORTARIA_SERVER__PORT'));
    assert.ok(names.includes('PORTARIA_ISSUER'));
    assert.ok(names.includes('PORTARIA_TOKEN_LIMITS__FAILED_SECRET_BACKOFF__BASE_DELAY_MS'));
    assert.ok(names.includes('PORTARIA_ROUTES'));
    assert.equal(new Set(names).size, names.length, 'two settings share a variable');
  });

  for (const { path, node } of all) {
    const name = documentedName(path);
    test(`${path.join('.')} is set by ${name}`, async (t) => {
      const { dir, file } = await configDir(t);
      const refused: string[] = [];
      // Alone, then beside the settings another one may need.
      const tries = candidates(node).flatMap(([text, expected]) =>
        COMPANIONS.map((more) => [{ ...more, [name]: text }, text, expected] as const),
      );
      for (const [env, text, expected] of tries) {
        let config: unknown;
        try {
          config = await loadConfig({ file, env, cwd: join(dir, 'cwd') });
        } catch (error) {
          refused.push(`${text}: ${(error as Error).message}`);
          continue;
        }
        assert.ok(
          holds(at(config, path), expected, dir),
          `${name}=${text} loaded ${JSON.stringify(at(config, path))}`,
        );
        return;
      }
      assert.fail(`no value of ${name} was taken:\n${refused.join('\n')}`);
    });
  }

  test('precedence: the environment over the file over the default', async (t) => {
    const none = await configDir(t, '');
    const file = await configDir(t, 'server:\n  port: 8100\naudience: from-file\n');
    const load = (where: { dir: string; file: string }, env: Record<string, string>) =>
      loadConfig({ file: where.file, env, cwd: join(where.dir, 'cwd') });
    assert.equal((await load(none, {})).server.port, 8080);
    assert.equal((await load(file, {})).server.port, 8100);
    const both = await load(file, { PORTARIA_SERVER__PORT: '8200', PORTARIA_AUDIENCE: 'env' });
    assert.equal(both.server.port, 8200);
    assert.equal(both.audience, 'env');
    assert.equal((await load(none, { PORTARIA_SERVER__PORT: '8200' })).server.port, 8200);
  });

  test('a list from the environment replaces the file list whole, JSON or comma-separated', async (t) => {
    const { dir, file } = await configDir(
      t,
      'forwardCallerHeaders: [x-client-ip, x-host, x-http-method]\n',
    );
    const load = (text: string) =>
      loadConfig({ file, env: { PORTARIA_FORWARD_CALLER_HEADERS: text }, cwd: dir });
    assert.deepEqual((await load('x-remote-ip')).forwardCallerHeaders, ['x-remote-ip']);
    assert.deepEqual((await load(' client-ip , x-host ')).forwardCallerHeaders, [
      'client-ip',
      'x-host',
    ]);
    assert.deepEqual((await load('["x-method-override"]')).forwardCallerHeaders, [
      'x-method-override',
    ]);
  });

  test('routes come as JSON and their problems name the variable', async (t) => {
    const { dir, file } = await configDir(t);
    const load = (text: string) => loadConfig({ file, env: { PORTARIA_ROUTES: text }, cwd: dir });
    const ok = await load('[{"id":"a","prefix":"/a","upstream":"http://127.0.0.1:9000"}]');
    assert.equal(ok.routes[0]?.prefix, '/a');
    assert.deepEqual(await problemsOf(() => load('id=a')), [
      'routes (PORTARIA_ROUTES): must be a JSON array (a list of objects has no comma-separated form)',
    ]);
    const problems = await problemsOf(() => load('[{"id":"a","prefix":"a","upstream":"u"}]'));
    assert.ok(problems.length > 0);
    for (const problem of problems)
      assert.match(problem, /^routes\[0\][^ ]* \(PORTARIA_ROUTES\): /);
  });

  const badValues: [string, string, string][] = [
    ['PORTARIA_SERVER__PORT', 'eighty', 'server.port (PORTARIA_SERVER__PORT): must be an integer'],
    ['PORTARIA_LOG__PRETTY', 'yes', 'log.pretty (PORTARIA_LOG__PRETTY): must be true or false'],
    [
      'PORTARIA_TOKEN_LIMITS__PER_ADDRESS__RATE_PER_SECOND',
      '5/s',
      'tokenLimits.perAddress.ratePerSecond (PORTARIA_TOKEN_LIMITS__PER_ADDRESS__RATE_PER_SECOND): must be a number',
    ],
    [
      'PORTARIA_IDENTITY_HEADERS',
      '{sub:',
      'identityHeaders (PORTARIA_IDENTITY_HEADERS): must be JSON',
    ],
  ];
  for (const [name, value, problem] of badValues) {
    test(`${name}=${JSON.stringify(value)} is refused naming the setting and the variable`, async (t) => {
      const { dir, file } = await configDir(t);
      assert.deepEqual(
        await problemsOf(() => loadConfig({ file, env: { [name]: value }, cwd: dir })),
        [problem],
      );
    });
  }

  const unknown: [string, string][] = [
    ['PORTARIA_SERVER_PORT', 'PORTARIA_SERVER__PORT'],
    ['PORTARIA_TOKEN__ISSUER', 'PORTARIA_ISSUER'],
    ['PORTARIA_LOG__LEVLE', 'PORTARIA_LOG__LEVEL'],
  ];
  for (const [name, nearest] of unknown) {
    test(`an unknown variable ${name} is a problem naming ${nearest}`, async (t) => {
      const { dir, file } = await configDir(t);
      assert.deepEqual(
        await problemsOf(() => loadConfig({ file, env: { [name]: 'x' }, cwd: dir })),
        [`${name}: no setting has this variable (did you mean ${nearest}?)`],
      );
    });
  }

  test('variables outside PORTARIA_ and PORTARIA_CONFIG are not settings and not problems', async (t) => {
    const { dir, file } = await configDir(t);
    const config = await loadConfig({
      file,
      env: { PORTARIA_CONFIG: file, PORTARIA_ADMIN_URL: 'http://x', PORTARIAX: '1', HOME: '/' },
      cwd: dir,
    });
    assert.equal(config.server.port, 8080);
  });

  test('the kept short names of earlier releases still set their settings', async (t) => {
    const { dir, file } = await configDir(t);
    const config = await loadConfig({
      file,
      env: {
        PORTARIA_KEYS_DIR: '/run/keys',
        PORTARIA_CLIENTS_FILE: '/run/clients.json',
        PORTARIA_LOG_LEVEL: 'warn',
        PORTARIA_LOG_PRETTY: 'true',
        PORTARIA_ADMIN_TOKEN_FILE: '/run/admin-token',
        PORTARIA_REVOCATION_FILE: '/var/lib/portaria/revocations.log',
        PORTARIA_REDIS_URL: 'redis://127.0.0.1:6390/0',
      },
      cwd: dir,
    });
    assert.equal(config.keys.dir, '/run/keys');
    assert.equal(config.clients.file, '/run/clients.json');
    assert.equal(config.log.level, 'warn');
    assert.equal(config.log.pretty, true);
    assert.equal(config.admin.tokenFile, '/run/admin-token');
    assert.equal(config.revocation.file, '/var/lib/portaria/revocations.log');
    assert.equal(config.redis.url, 'redis://127.0.0.1:6390/0');
  });

  test('a short name and the full name with different values are a problem', async (t) => {
    const { dir, file } = await configDir(t);
    const load = (env: Record<string, string>) => loadConfig({ file, env, cwd: dir });
    assert.equal(
      (await load({ PORTARIA_LOG_LEVEL: 'warn', PORTARIA_LOG__LEVEL: 'warn' })).log.level,
      'warn',
    );
    assert.deepEqual(
      await problemsOf(() => load({ PORTARIA_LOG_LEVEL: 'warn', PORTARIA_LOG__LEVEL: 'debug' })),
      [
        'log.level (PORTARIA_LOG__LEVEL): PORTARIA_LOG_LEVEL sets it too, to another value; set one of them',
      ],
    );
  });

  test('the retired PORTARIA_PORT and PORTARIA_ADMIN_PORT with a plain value name their replacements', async (t) => {
    const { dir, file } = await configDir(t);
    assert.deepEqual(
      await problemsOf(() =>
        loadConfig({
          file,
          env: {
            PORTARIA_ADMIN_PORT: '9443',
            PORTARIA_PORT: '8443',
            PORTARIA_SERVER__PORT: '8443',
          },
          cwd: dir,
        }),
      ),
      [
        'PORTARIA_PORT: no longer read (Kubernetes sets this name for its Services); set PORTARIA_SERVER__PORT',
        'PORTARIA_ADMIN_PORT: no longer read (Kubernetes sets this name for its Services); set PORTARIA_ADMIN__PORT',
      ],
    );
  });

  test('service-link variables are left alone: a tcp:// value is never read as a port', async (t) => {
    const { dir, file } = await configDir(t);
    const config = await loadConfig({
      file,
      env: {
        PORTARIA_PORT: 'tcp://10.96.0.12:80',
        PORTARIA_ADMIN_PORT: 'tcp://10.96.0.13:9091',
        PORTARIA_SERVICE_HOST: '10.96.0.12',
        PORTARIA_SERVICE_PORT_HTTP: '80',
        PORTARIA_SERVER__PORT: '8443',
      },
      cwd: dir,
    });
    assert.equal(config.server.port, 8443);
    assert.equal(config.admin.port, 9091);
  });

  test('a misspelt setting shaped like no service link is still refused beside them', async (t) => {
    const { dir, file } = await configDir(t);
    assert.deepEqual(
      await problemsOf(() =>
        loadConfig({
          file,
          env: {
            PORTARIA_PORT: 'tcp://10.96.0.12:80',
            PORTARIA_SERVICE_HOST: '10.96.0.12',
            PORTARIA_SERVER_PORT: '8443',
          },
          cwd: dir,
        }),
      ),
      ['PORTARIA_SERVER_PORT: no setting has this variable (did you mean PORTARIA_SERVER__PORT?)'],
    );
  });
});
