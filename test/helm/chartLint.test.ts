/**
 * The chart as helm sees it: the pinned helm binary, `helm lint --strict` for the chart and
 * every CI scenario, the values schema refusing unknown keys (and agreeing with the
 * gateway's own configuration schema), the `fail` guards for impossible combinations, and
 * values.yaml documented key by key.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { chartConfigSchema } from '../../scripts/chartConfigSchema.js';
import { HELM_VERSION, helm, lint, parseManifests, SCENARIOS, template } from './helm.js';
import { CHART_DIR, VALUES_SCHEMA } from './paths.js';

describe('helm binary', () => {
  test(`the fetched helm is the pinned ${HELM_VERSION}`, async () => {
    const result = await helm(['version', '--short']);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`^${HELM_VERSION.replace(/\./g, '\\.')}\\+`));
  });
});

describe('helm lint --strict', () => {
  const cases = [{ name: 'chart defaults', files: [] as string[] }].concat(
    SCENARIOS.map((s) => ({ name: s.name, files: [s.file] })),
  );
  test('there are CI scenarios for default, redis-ha, existing-secret and monitoring', () => {
    const names = SCENARIOS.map((s) => s.name);
    for (const name of ['default', 'redis-ha', 'existing-secret', 'monitoring']) {
      assert.ok(names.includes(name), `missing helm/portaria/ci/${name}-values.yaml`);
    }
  });
  for (const { name, files } of cases) {
    test(`${name}: lint passes with no warning and no swallowed fail`, async () => {
      const result = await lint(files);
      assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
      assert.match(result.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
      assert.doesNotMatch(result.stdout, /\[(WARNING|ERROR)\]/);
      // Lint renders in "lint mode", where `fail` only logs: catch it here.
      assert.doesNotMatch(`${result.stdout}${result.stderr}`, /Fail:/);
    });
  }
});

describe('values.schema.json', () => {
  const refused: [string, Record<string, unknown>, RegExp][] = [
    ['an unknown top-level key', { replicas: 2 }, /Additional property replicas is not allowed/],
    ['an unknown nested key', { service: { nodePort: 30000 } }, /Additional property nodePort/],
    [
      'a misspelt gateway setting',
      { config: { servr: { port: 1 } } },
      /Additional property servr is not allowed/,
    ],
    [
      'a chart-owned TLS setting (config.server.tls.certFile: the chart mounts tls.secret)',
      { config: { server: { tls: { certFile: '/x.pem' } } } },
      /Additional property certFile is not allowed/,
    ],
    [
      'a chart-owned client CA file (config.clientCertificate.caFiles)',
      { config: { clientCertificate: { caFiles: ['/x.pem'] } } },
      /Additional property caFiles is not allowed/,
    ],
    [
      'client certificates "off" unquoted, which YAML 1.1 reads as false',
      { config: { server: { tls: { clientCertificates: false } } } },
      /clientCertificates/,
    ],
    [
      'a chart-owned gateway setting (server.port)',
      { config: { server: { port: 9000 } } },
      /Additional property port is not allowed/,
    ],
    [
      'a chart-owned gateway setting (admin)',
      { config: { admin: { host: '127.0.0.1' } } },
      /Additional property admin is not allowed/,
    ],
    [
      'a gateway setting of the wrong value',
      { config: { token: { algorithm: 'HS256' } } },
      /config\.token\.algorithm/,
    ],
    ['a value of the wrong type', { replicaCount: 'three' }, /replicaCount/],
    [
      'a scrape interval with its units out of order (Prometheus wants 1m30s)',
      { serviceMonitor: { interval: '30s1m' } },
      /serviceMonitor\.interval/,
    ],
    [
      'a scrape timeout with a unit twice',
      { serviceMonitor: { scrapeTimeout: '5s5s' } },
      /serviceMonitor\.scrapeTimeout/,
    ],
    ['an empty scrape interval', { serviceMonitor: { interval: '' } }, /serviceMonitor\.interval/],
    [
      'a signing key file name the gateway would ignore',
      { secrets: { signingKeys: { 'key.txt': 'x' } } },
      /signingKeys/,
    ],
    ['a short admin token', { secrets: { adminToken: 'short' } }, /adminToken/],
    [
      'a Redis URL with a password (redis://:secret@host)',
      { redis: { url: 'redis://:secret@redis:6379' } },
      /redis\.url/,
    ],
    [
      'a Redis URL with a user and a password',
      { redis: { url: 'rediss://default:secret@redis.example:6380/0' } },
      /redis\.url/,
    ],
    [
      'a Redis URL with a password holding an @',
      { redis: { url: 'redis://user:p@ss@redis:6379' } },
      /redis\.url/,
    ],
    [
      'a Redis URL with a password in the query',
      { redis: { url: 'redis://redis:6379/0?password=secret' } },
      /redis\.url/,
    ],
    [
      "an alert's for with its units out of order (Prometheus wants 1h30m)",
      { prometheusRule: { alerts: { down: { for: '30m1h' } } } },
      /prometheusRule\.alerts\.down\.for/,
    ],
    [
      "an alert's for with a unit twice",
      { prometheusRule: { alerts: { down: { for: '5m5m' } } } },
      /prometheusRule\.alerts\.down\.for/,
    ],
    [
      'a rollout that may take down more than every pod (maxUnavailable 150%)',
      { updateStrategy: { maxUnavailable: '150%' } },
      /updateStrategy\.maxUnavailable/,
    ],
    [
      'a disruption budget above 100% (minAvailable 101%)',
      { podDisruptionBudget: { enabled: true, minAvailable: '101%' } },
      /podDisruptionBudget\.minAvailable/,
    ],
    [
      'a disruption budget above 100% (maxUnavailable 200%)',
      { podDisruptionBudget: { enabled: true, maxUnavailable: '200%' } },
      /podDisruptionBudget\.maxUnavailable/,
    ],
  ];
  for (const [what, values, message] of refused) {
    test(`refuses ${what}`, async () => {
      const result = await template({ values: [values] });
      assert.notEqual(result.code, 0, 'helm template accepted the values');
      assert.match(result.stderr, /values don't meet the specifications of the schema/);
      assert.match(result.stderr, message);
    });
  }

  test('accepts percentages up to 100% where Kubernetes does, and a surge above it', async () => {
    for (const values of [
      { updateStrategy: { maxUnavailable: '100%', maxSurge: '200%' } },
      { updateStrategy: { maxUnavailable: '25%', maxSurge: '050%' } },
      { podDisruptionBudget: { enabled: true, minAvailable: '100%' } },
      { podDisruptionBudget: { enabled: true, minAvailable: null, maxUnavailable: '0%' } },
      // Prometheus's own duration grammar takes a bare 0.
      { prometheusRule: { alerts: { down: { for: '0' } } } },
    ]) {
      const result = await template({ values: [values] });
      assert.equal(result.code, 0, `${JSON.stringify(values)}: ${result.stderr}`);
    }
  });

  test('accepts Redis URLs without a password (a user name alone is fine)', async () => {
    for (const url of [
      'redis://redis:6379',
      'redis://redis-master.redis.svc:6379/0',
      'rediss://user@redis.example:6380/0?family=6',
      'redis://[::1]:6379',
      '',
    ]) {
      const result = await template({ values: [{ redis: { url } }] });
      assert.equal(result.code, 0, `${url}: ${result.stderr}`);
    }
  });

  test("its config part is the gateway's configuration schema minus the chart-owned settings", async () => {
    const committed = JSON.parse(await readFile(VALUES_SCHEMA, 'utf8')) as {
      properties: Record<string, unknown>;
    };
    assert.deepEqual(
      committed.properties.config,
      chartConfigSchema(),
      'values.schema.json is stale: run `npm run chart-schema`',
    );
  });

  test('every values.yaml key is in the schema and every schema key is in values.yaml', async () => {
    const values = parse(await readFile(join(CHART_DIR, 'values.yaml'), 'utf8')) as Record<
      string,
      unknown
    >;
    const schema = JSON.parse(await readFile(VALUES_SCHEMA, 'utf8')) as SchemaNode;
    const problems: string[] = [];
    compareKeys(values, schema, '', problems);
    assert.deepEqual(problems, []);
  });
});

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  additionalProperties?: unknown;
}

/** Chart keys both ways; `config` only one way (values.yaml shows a few gateway settings). */
function compareKeys(values: unknown, schema: SchemaNode, path: string, problems: string[]): void {
  if (schema.properties === undefined) return; // free-form Kubernetes objects and maps
  const object = (values ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(object)) {
    if (!(key in schema.properties))
      problems.push(`${path}${key}: in values.yaml, not in the schema`);
  }
  if (schema.additionalProperties !== false) return;
  for (const [key, child] of Object.entries(schema.properties)) {
    const inValues = key in object;
    if (!inValues && path.split('.')[0] !== 'config') {
      problems.push(`${path}${key}: in the schema, not in values.yaml`);
    }
    if (inValues && typeof object[key] === 'object' && !Array.isArray(object[key])) {
      compareKeys(object[key], child, `${path}${key}.`, problems);
    }
  }
}

describe('values.yaml', () => {
  test('every key has a comment line right above it', async () => {
    const lines = (await readFile(join(CHART_DIR, 'values.yaml'), 'utf8')).split('\n');
    const undocumented: string[] = [];
    let inList = -1; // indentation of the list being skipped (its items are examples or data)
    lines.forEach((line, i) => {
      const key = /^(\s*)([^\s#-][^:]*):(\s|$)/.exec(line);
      const item = /^(\s*)- /.exec(line);
      if (item) {
        inList = (item[1] as string).length;
        return;
      }
      if (!key) return;
      const indent = (key[1] as string).length;
      if (inList >= 0 && indent > inList) return;
      inList = -1;
      const above = lines[i - 1] ?? '';
      if (!/^\s*#/.test(above)) undocumented.push(`line ${i + 1}: ${line.trim()}`);
    });
    assert.deepEqual(undocumented, []);
  });
});

describe('fail guards', () => {
  const redis = { redis: { url: 'redis://redis:6379' } };
  const guards: [string, Record<string, unknown>, RegExp][] = [
    [
      'several replicas with the local revocation store',
      { replicaCount: 3 },
      /replicaCount > 1 or autoscaling.enabled needs config.revocation.store: redis \(the local/,
    ],
    [
      'autoscaling with the memory revocation store',
      { autoscaling: { enabled: true }, config: { revocation: { store: 'memory' } } },
      /needs config.revocation.store: redis \(the memory/,
    ],
    [
      'the redis revocation store without a URL',
      { config: { revocation: { store: 'redis' } } },
      /set redis.url, redis.existingSecret, redis.sentinel.nodes or redis.cluster.nodes/,
    ],
    [
      'redis token limits without a URL',
      { config: { tokenLimits: { store: 'redis' } } },
      /set redis.url, redis.existingSecret, redis.sentinel.nodes or redis.cluster.nodes/,
    ],
    [
      'several replicas with quota policies counted per pod',
      {
        replicaCount: 2,
        ...redis,
        config: {
          revocation: { store: 'redis' },
          oauth: { replayStore: 'redis' },
          quotas: { policies: { daily: { quota: { limit: 10, window: 'day' } } } },
        },
      },
      /with config\.quotas\.policies needs config\.quotas\.store: redis/,
    ],
    [
      'several replicas with DPoP nonces and no shared nonce secret',
      {
        replicaCount: 2,
        ...redis,
        config: {
          revocation: { store: 'redis' },
          oauth: { replayStore: 'redis' },
          dpop: { enabled: true, nonces: { enabled: true } },
        },
      },
      /needs config.dpop.nonces.secretFile \(one secret every replica shares/,
    ],
    [
      'several replicas with a local OAuth replay store',
      {
        replicaCount: 2,
        ...redis,
        config: { revocation: { store: 'redis' }, oauth: { replayStore: 'local' } },
      },
      /needs config.oauth.replayStore: redis \(a local replay store/,
    ],
    [
      'a redis OAuth replay store without a URL',
      { config: { oauth: { replayStore: 'redis' } } },
      /set redis.url, redis.existingSecret, redis.sentinel.nodes or redis.cluster.nodes/,
    ],
    [
      'a Redis URL from values and from a Secret',
      { redis: { url: 'redis://redis:6379', existingSecret: 'redis-url' } },
      /choose one source for the Redis URL/,
    ],
    [
      'a Redis URL and Sentinel nodes',
      { redis: { url: 'redis://redis:6379', sentinel: { masterName: 'm', nodes: ['s:26379'] } } },
      /redis.url\/existingSecret and redis.sentinel.nodes are all set: Redis is reached one way/,
    ],
    [
      'Sentinel and Cluster nodes',
      {
        redis: {
          sentinel: { masterName: 'm', nodes: ['s:26379'] },
          cluster: { nodes: ['c:6379'] },
        },
      },
      /redis.sentinel.nodes and redis.cluster.nodes are all set/,
    ],
    [
      'Sentinel nodes without the primary name',
      { redis: { sentinel: { nodes: ['s:26379'] } } },
      /redis.sentinel.nodes needs redis.sentinel.masterName/,
    ],
    [
      'a Redis TLS Secret with TLS off',
      { ...redis, redis: { ...redis.redis, tls: { secret: { name: 'ca' } } } },
      /redis.tls.secret is set but redis.tls.enabled is false/,
    ],
    [
      'Redis TLS on with a redis:// URL',
      { redis: { url: 'redis://redis:6379', tls: { enabled: true } } },
      /use rediss:\/\/ for TLS/,
    ],
    [
      'a Redis client certificate without its key',
      {
        redis: {
          url: 'rediss://redis:6379',
          tls: { enabled: true, secret: { name: 'c', certKey: 'tls.crt' } },
        },
      },
      /redis.tls.secret.certKey needs redis.tls.secret.keyKey/,
    ],
    [
      'existingSecret together with inline secrets',
      { secrets: { existingSecret: 'mine', clientsJson: '{"clients":[]}' } },
      /secrets.existingSecret is set together with inline secrets/,
    ],
    [
      'the admin API without a token',
      { adminApi: { enabled: true } },
      /adminApi.enabled needs secrets.adminToken/,
    ],
    [
      'test credentials inline and from a Secret',
      { tests: { existingSecret: 'creds', clientId: 'a', clientSecret: 'b' } },
      /tests.existingSecret is set together with tests.clientId/,
    ],
    ['a test client id without its secret', { tests: { clientId: 'a' } }, /go together/],
    [
      'the same port for both listeners',
      { ports: { http: 9091, admin: 9091 } },
      /ports.http and ports.admin must differ/,
    ],
    [
      'autoscaling bounds upside down',
      {
        ...redis,
        config: { revocation: { store: 'redis' } },
        autoscaling: { enabled: true, minReplicas: 5, maxReplicas: 2 },
      },
      /minReplicas is above autoscaling.maxReplicas/,
    ],
    [
      'a disruption budget with both bounds',
      { podDisruptionBudget: { minAvailable: 1, maxUnavailable: 1 } },
      /set minAvailable or maxUnavailable, not both/,
    ],
    [
      'a termination grace period shorter than the drain',
      { terminationGracePeriodSeconds: 12, config: { server: { shutdownGraceMs: 10_000 } } },
      /terminationGracePeriodSeconds \(12\) is too short: .* \+ 5 s of cleanup after the drain = 20; set it to at least 20 or leave it null/,
    ],
    [
      'a termination grace period that leaves no time for the cleanup after the drain',
      { terminationGracePeriodSeconds: 15, config: { server: { shutdownGraceMs: 10_000 } } },
      /terminationGracePeriodSeconds \(15\) is too short: drain\.preStopSleepSeconds \(5\) \+ ceil\(config\.server\.shutdownGraceMs \/ 1000\) \(10\) \+ 5 s/,
    ],
    [
      'a termination grace period too short without a preStop hook',
      {
        terminationGracePeriodSeconds: 14,
        drain: { preStopSleepSeconds: 0 },
        config: { server: { shutdownGraceMs: 9_001 } },
      },
      /terminationGracePeriodSeconds \(14\) is too short: .* = 15/,
    ],
    [
      'a scrape timeout longer than the scrape interval (the operator drops the ServiceMonitor)',
      { serviceMonitor: { enabled: true, interval: '5s' } },
      /serviceMonitor\.scrapeTimeout \(10s\) is longer than serviceMonitor\.interval \(5s\)/,
    ],
    [
      'a scrape timeout longer than the interval by a millisecond (compound durations)',
      { serviceMonitor: { enabled: true, interval: '1m30s', scrapeTimeout: '1m30s1ms' } },
      /serviceMonitor\.scrapeTimeout \(1m30s1ms\) is longer than serviceMonitor\.interval \(1m30s\)/,
    ],
    [
      'a scrape interval leaving the alerts fewer than two samples per 5m window',
      { serviceMonitor: { enabled: true, interval: '3m' }, prometheusRule: { enabled: true } },
      /serviceMonitor\.interval \(3m\) is above 150s: .*prometheusRule.*\[5m\]/,
    ],
    [
      "a scrape interval just above half the alerts' window",
      {
        serviceMonitor: { enabled: true, interval: '2m30s1ms' },
        prometheusRule: { enabled: true },
      },
      /serviceMonitor\.interval \(2m30s1ms\) is above 150s/,
    ],
    [
      'a rolling update with maxSurge 0 and maxUnavailable 0',
      { updateStrategy: { maxSurge: 0, maxUnavailable: 0 } },
      /updateStrategy\.maxSurge \(0\) and updateStrategy\.maxUnavailable \(0\) are both 0/,
    ],
    [
      'a rolling update with maxSurge 0% and maxUnavailable 0',
      { updateStrategy: { maxSurge: '0%', maxUnavailable: 0 } },
      /updateStrategy\.maxSurge \(0%\) and updateStrategy\.maxUnavailable \(0\) are both 0/,
    ],
    [
      'a rolling update with maxSurge 0 and maxUnavailable 00%',
      { updateStrategy: { maxSurge: 0, maxUnavailable: '00%' } },
      /updateStrategy\.maxSurge \(0\) and updateStrategy\.maxUnavailable \(00%\) are both 0/,
    ],
    [
      'the removed config.server.trustForwardedHeaders (it names trustedProxies)',
      { config: { server: { trustForwardedHeaders: true } } },
      /config\.server\.trustForwardedHeaders: replaced by config\.server\.trustedProxies/,
    ],
    [
      'the removed config.server.trustForwardedHeaders even when false',
      { config: { server: { trustForwardedHeaders: false } } },
      /replaced by config\.server\.trustedProxies/,
    ],
    [
      'pretty logs (pino-pretty is not in the image)',
      { config: { log: { pretty: true } } },
      /config.log.pretty needs pino-pretty/,
    ],
    [
      'one claim mounted by several pods',
      {
        ...redis,
        replicaCount: 2,
        config: { revocation: { store: 'redis' } },
        persistence: { existingClaim: 'data' },
      },
      /persistence.existingClaim is mounted by every pod/,
    ],
    [
      'TLS without the Secret of its certificate',
      { tls: { enabled: true } },
      /tls.enabled needs tls.secret.name/,
    ],
    [
      'a TLS Secret with TLS off',
      { tls: { secret: { name: 'portaria-tls' } } },
      /tls.secret.name is set but tls.enabled is false/,
    ],
    [
      'gateway TLS settings with TLS off',
      { config: { server: { tls: { policy: 'fapi' } } } },
      /config.server.tls needs tls.enabled/,
    ],
    [
      'client certificates asked for without client CAs',
      {
        tls: { enabled: true, secret: { name: 'portaria-tls' } },
        config: { server: { tls: { clientCertificates: 'request' } } },
      },
      /config.server.tls.clientCertificates: request needs clientCertificate.ca/,
    ],
    [
      'the client CAs from a Secret and a ConfigMap',
      { clientCertificate: { ca: { secretName: 'a', configMapName: 'b' } } },
      /clientCertificate.ca: secretName and configMapName are both set/,
    ],
    [
      'CRLs without their CAs',
      { clientCertificate: { crl: { configMapName: 'crls' } } },
      /clientCertificate.crl needs clientCertificate.ca/,
    ],
    [
      'require mode with a test client but no client certificate for the test',
      {
        tls: { enabled: true, secret: { name: 'portaria-tls' } },
        clientCertificate: { ca: { configMapName: 'cas' } },
        config: {
          server: { tls: { clientCertificates: 'require' } },
          clientCertificate: { source: 'tls' },
        },
        tests: { clientId: 'a', clientSecret: 'b' },
      },
      /set tests.tls.clientSecret/,
    ],
  ];
  for (const [what, values, message] of guards) {
    test(`refuses ${what}`, async () => {
      const result = await template({ values: [values] });
      assert.notEqual(result.code, 0, 'helm template rendered an impossible combination');
      assert.match(result.stderr, message);
    });
  }

  test('the same combinations made possible render', async () => {
    const fine: Record<string, unknown>[] = [
      { ...redis, replicaCount: 3, config: { revocation: { store: 'redis' } } },
      { terminationGracePeriodSeconds: 20, config: { server: { shutdownGraceMs: 10_000 } } },
      {
        terminationGracePeriodSeconds: 15,
        drain: { preStopSleepSeconds: 0 },
        config: { server: { shutdownGraceMs: 9_001 } },
      },
      { adminApi: { enabled: true }, secrets: { adminToken: 'a-long-enough-admin-token' } },
    ];
    for (const values of fine) {
      const result = await template({ values: [values] });
      assert.equal(result.code, 0, `${JSON.stringify(values)}: ${result.stderr}`);
    }
  });

  test('scrape timings Prometheus accepts render, as given', async () => {
    const monitoring = { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } };
    const fine: [Record<string, unknown>, string, string][] = [
      [monitoring, '30s', '10s'],
      [{ serviceMonitor: { enabled: true, interval: '5s', scrapeTimeout: '5s' } }, '5s', '5s'],
      [{ ...monitoring, serviceMonitor: { enabled: true, interval: '2m30s' } }, '2m30s', '10s'],
      [
        { serviceMonitor: { enabled: true, interval: '1m30s', scrapeTimeout: '1m29s999ms' } },
        '1m30s',
        '1m29s999ms',
      ],
      // Without the PrometheusRule no rate window depends on the interval.
      [{ serviceMonitor: { enabled: true, interval: '3m' } }, '3m', '10s'],
    ];
    for (const [values, interval, scrapeTimeout] of fine) {
      const result = await template({ values: [values] });
      assert.equal(result.code, 0, `${JSON.stringify(values)}: ${result.stderr}`);
      const monitor = parseManifests(result.stdout).find((o) => o.kind === 'ServiceMonitor') as
        | { spec: { endpoints: { interval: string; scrapeTimeout: string }[] } }
        | undefined;
      assert.deepEqual(
        monitor?.spec.endpoints.map((e) => [e.interval, e.scrapeTimeout]),
        [[interval, scrapeTimeout]],
      );
    }
    // Not scraped by the chart's ServiceMonitor: its timings are not checked.
    const off = await template({ values: [{ serviceMonitor: { interval: '5s' } }] });
    assert.equal(off.code, 0, off.stderr);
  });

  test('rolling updates that can make progress render; Recreate ignores updateStrategy', async () => {
    const fine: Record<string, unknown>[] = [
      { updateStrategy: { maxSurge: 0, maxUnavailable: 1 } },
      { updateStrategy: { maxSurge: '25%', maxUnavailable: 0 } },
      { updateStrategy: { maxSurge: '0%', maxUnavailable: '10%' } },
      {
        updateStrategy: { maxSurge: 0, maxUnavailable: 0 },
        persistence: { existingClaim: 'data' },
      },
    ];
    for (const values of fine) {
      const result = await template({ values: [values] });
      assert.equal(result.code, 0, `${JSON.stringify(values)}: ${result.stderr}`);
    }
  });
});
