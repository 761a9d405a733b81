/**
 * The chart's monitoring: the PrometheusRule's groups checked by `promtool check rules`
 * and unit-tested by `promtool test rules` (test/helm/alerts/), the Grafana dashboard
 * parsed, and every metric the alerts and the dashboard query exposed by the real
 * gateway's registry (scraped from `/metrics` of a gateway started in-process).
 */
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import type { IPrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { parse, stringify } from 'yaml';
import { startGateway } from '../helpers/fixture.js';
import { scrape } from '../helpers/metrics.js';
import { find, type K8sObject, render, run, SCENARIOS } from './helm.js';
import { CHART_DIR, REPO_ROOT } from './paths.js';

/**
 * Metrics the alerts or the dashboard query that the gateway does not expose yet. The test
 * fails when this list is wrong either way: a metric missing from the registry and not
 * listed here, or a listed metric that now exists (then delete it from the list).
 */
export const EXPECTED_MISSING_METRICS: readonly string[] = [];

/** Series Prometheus writes itself for every scrape target, not the gateway's registry. */
const PROMETHEUS_SERIES: ReadonlySet<string> = new Set(['up']);

const PROMTOOL = process.env.PROMTOOL ?? 'promtool';
const RULE_TESTS = join(REPO_ROOT, 'test', 'helm', 'alerts', 'portaria-alerts.test.yaml');

async function monitoringScenario(): Promise<K8sObject[]> {
  const scenario = SCENARIOS.find((s) => s.name === 'monitoring');
  assert.ok(scenario, 'the monitoring CI scenario');
  return render({ files: [scenario.file] });
}

type Rule = NonNullable<NonNullable<IPrometheusRule['spec']['groups']>[number]['rules']>[number];

function rulesOf(objects: readonly K8sObject[]): Rule[] {
  const rule = find(objects, 'PrometheusRule') as unknown as IPrometheusRule;
  return (rule.spec.groups ?? []).flatMap((g) => g.rules ?? []);
}

/** Writes the rendered groups as a Prometheus rules file (what the operator hands Prometheus). */
async function writeRules(t: TestContext, objects: readonly K8sObject[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-rules-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const rule = find(objects, 'PrometheusRule') as unknown as IPrometheusRule;
  await writeFile(join(dir, 'rules.yaml'), stringify({ groups: rule.spec.groups }));
  return dir;
}

describe('PrometheusRule', () => {
  test('promtool check rules accepts the groups (lint: all, fatal)', async (t) => {
    const dir = await writeRules(t, await monitoringScenario());
    const result = await run(
      PROMTOOL,
      ['check', 'rules', '--lint=all', '--lint-fatal', 'rules.yaml'],
      {
        cwd: dir,
      },
    );
    assert.equal(result.code, 0, `${result.stdout}${result.stderr}`);
    assert.match(result.stdout, /SUCCESS: 11 rules found/);
  });

  test('promtool test rules: every alert fires on its condition and stays silent below it', async (t) => {
    const objects = await monitoringScenario();
    const dir = await writeRules(t, objects);
    await copyFile(RULE_TESTS, join(dir, 'alerts.test.yaml'));
    const result = await run(PROMTOOL, ['test', 'rules', 'alerts.test.yaml'], { cwd: dir });
    assert.equal(result.code, 0, `${result.stdout}${result.stderr}`);
    assert.match(result.stdout, /SUCCESS/);

    // Each rendered alert has a firing case and a silent case in the test file.
    const tests = parse(await readFile(RULE_TESTS, 'utf8')) as {
      tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    const cases = tests.tests.flatMap((c) => c.alert_rule_test);
    for (const rule of rulesOf(objects)) {
      const name = rule.alert as string;
      const mine = cases.filter((c) => c.alertname === name);
      assert.ok(
        mine.some((c) => c.exp_alerts.length > 0),
        `${name}: no firing case`,
      );
      assert.ok(
        mine.some((c) => c.exp_alerts.length === 0),
        `${name}: no silent case`,
      );
    }
  });

  test('the six alerts of the issue, plus latency, Redis, log drops, reload failures and the outage; Redis alerts only when a store uses Redis', async () => {
    const names = rulesOf(await monitoringScenario()).map((r) => r.alert);
    assert.deepEqual(names, [
      'PortariaHighErrorRatio',
      'PortariaAuthFailureSpike',
      'PortariaHighLatency',
      'PortariaIssuerKeySetStale',
      'PortariaRevocationSyncLag',
      'PortariaRedisDisconnected',
      'PortariaSigningKeyRetiringWithoutSuccessor',
      'PortariaTokenEndpointRateLimited',
      'PortariaLogsDropped',
      'PortariaConfigReloadFailing',
      'PortariaDown',
    ]);
    // No ServiceMonitor and the default selector: no PortariaDown (see the next test).
    const local = await render({ values: [{ prometheusRule: { enabled: true } }] });
    assert.deepEqual(
      rulesOf(local).map((r) => r.alert),
      [
        'PortariaHighErrorRatio',
        'PortariaAuthFailureSpike',
        'PortariaHighLatency',
        'PortariaIssuerKeySetStale',
        'PortariaSigningKeyRetiringWithoutSuccessor',
        'PortariaTokenEndpointRateLimited',
        'PortariaLogsDropped',
        'PortariaConfigReloadFailing',
      ],
    );
    const tuned = await render({
      values: [
        {
          prometheusRule: {
            enabled: true,
            seriesSelector: 'service="gw"',
            alerts: { errorRatio: { threshold: 0.2 }, authFailureSpike: { enabled: false } },
          },
        },
      ],
    });
    const rules = rulesOf(tuned);
    // No Redis: 11 − 2 Redis alerts − the switched-off one (PortariaDown is in: own selector).
    assert.equal(rules.length, 8);
    assert.match(String(rules[0]?.expr), /\{service="gw",status_class="5xx"\}/);
    assert.match(String(rules[0]?.expr), /\) > 0\.2\n/);
  });

  test('every alert links its runbook: a section of docs/operating.md, under prometheusRule.runbookBaseUrl', async () => {
    const docs = await readFile(join(REPO_ROOT, 'docs', 'operating.md'), 'utf8');
    const anchors = new Set(
      [...docs.matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
        (m[1] as string)
          .toLowerCase()
          .replace(/[^a-z0-9 _-]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    const rules = rulesOf(await monitoringScenario());
    assert.equal(rules.length, 11);
    for (const rule of rules) {
      const url = String(rule.annotations?.runbook_url);
      assert.equal(url, `docs/operating.md#${String(rule.alert).toLowerCase()}`, rule.alert);
      assert.ok(anchors.has(url.split('#')[1] as string), `${rule.alert}: no section ${url}`);
    }
    const own = rulesOf(
      await render({
        values: [
          {
            prometheusRule: {
              enabled: true,
              runbookBaseUrl: 'https://git.example/platform/portaria/docs/operating.md',
            },
          },
        ],
      }),
    );
    assert.equal(
      own[0]?.annotations?.runbook_url,
      'https://git.example/platform/portaria/docs/operating.md#portariahigherrorratio',
    );
  });

  test('ratio alerts stay silent below their traffic guard; the latency budgets per route', async () => {
    const rules = rulesOf(
      await render({
        values: [
          {
            prometheusRule: {
              enabled: true,
              alerts: {
                errorRatio: { minRequestsPerSecond: 20 },
                authFailureSpike: { minRequestsPerSecond: 30 },
                latency: { budgetSeconds: 0.5, routeBudgetsSeconds: { reports: 5, token: 2 } },
              },
            },
          },
        ],
      }),
    );
    const expr = (name: string) => String(rules.find((r) => r.alert === name)?.expr);
    assert.match(
      expr('PortariaHighErrorRatio'),
      /\nand\nsum by \(namespace, job\) \(rate\(portaria_http_requests_total\{[^}]*\}\[5m\]\)\) > 20\n$/,
    );
    assert.match(expr('PortariaAuthFailureSpike'), /\) > 30\n$/);
    const latency = expr('PortariaHighLatency');
    assert.match(latency, /route!~"reports\|token"\}\[5m\]\)\)\) > 0\.5\n/);
    assert.match(latency, /route="reports"\}\[5m\]\)\)\) > 5\n/);
    assert.match(latency, /route="token"\}\[5m\]\)\)\) > 2\n/);
    assert.match(latency, /_count\{[^}]*\}\[5m\]\)\) > 1\n$/);
  });

  test('PortariaDown only when something scrapes the release under the selector, and pods are asked for', async () => {
    const downOf = async (values: Record<string, unknown>): Promise<Rule | undefined> =>
      rulesOf(await render({ values: [values] })).find((r) => r.alert === 'PortariaDown');
    const scraped = { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } };

    const down = await downOf(scraped);
    assert.equal(
      down?.expr,
      'sum by (namespace, job) (up{job="portaria",namespace="portaria"}) == 0\nor\nabsent(up{job="portaria",namespace="portaria"})\n',
    );
    assert.deepEqual([down?.for, down?.labels?.severity], ['5m', 'critical']);
    // Without the ServiceMonitor nothing may produce up{job="<full name>"}: absent() would
    // page for ever.
    assert.equal(await downOf({ prometheusRule: { enabled: true } }), undefined);
    // A selector of your own says how your scrape labels the release.
    const own = await downOf({ prometheusRule: { enabled: true, seriesSelector: 'service="gw"' } });
    assert.match(String(own?.expr), /^sum by \(namespace, job\) \(up\{service="gw"\}\) == 0\n/);
    assert.equal(await downOf({ ...scraped, replicaCount: 0 }), undefined);
    assert.equal(
      await downOf({
        ...scraped,
        prometheusRule: { enabled: true, alerts: { down: { enabled: false } } },
      }),
      undefined,
    );
    const tuned = await downOf({
      ...scraped,
      prometheusRule: { enabled: true, alerts: { down: { for: '10m', severity: 'page' } } },
    });
    assert.deepEqual([tuned?.for, tuned?.labels?.severity], ['10m', 'page']);
  });

  test('PortariaConfigReloadFailing holds 5 min by default and can be switched off or tuned', async () => {
    const reloadOf = async (values: Record<string, unknown>): Promise<Rule | undefined> =>
      rulesOf(await render({ values: [values] })).find(
        (r) => r.alert === 'PortariaConfigReloadFailing',
      );
    const rule = await reloadOf({ prometheusRule: { enabled: true } });
    assert.deepEqual([rule?.for, rule?.labels?.severity], ['5m', 'warning']);
    assert.match(String(rule?.expr), /portaria_config_last_reload_successful\{[^}]*\}\) == 0\n/);
    const tuned = await reloadOf({
      prometheusRule: {
        enabled: true,
        alerts: { configReloadFailing: { for: '1m', severity: 'info' } },
      },
    });
    assert.deepEqual([tuned?.for, tuned?.labels?.severity], ['1m', 'info']);
    assert.equal(
      await reloadOf({
        prometheusRule: { enabled: true, alerts: { configReloadFailing: { enabled: false } } },
      }),
      undefined,
    );
  });
});

/** Grafana's reference to the dashboard's data source variable. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a template.
const DATASOURCE_UID = '${datasource}';

interface Dashboard {
  uid: string;
  title: string;
  templating: { list: { name: string; type: string; query: unknown }[] };
  panels: {
    id: number;
    type: string;
    title: string;
    gridPos: { x: number; w: number };
    datasource?: { uid: string };
    targets?: { expr: string; datasource: { uid: string } }[];
  }[];
}

async function dashboard(): Promise<{ text: string; json: Dashboard }> {
  const text = await readFile(join(CHART_DIR, 'files', 'dashboard.json'), 'utf8');
  return { text, json: JSON.parse(text) as Dashboard };
}

describe('Grafana dashboard', () => {
  test('parses, every panel queries the chosen data source, ids are unique', async () => {
    const { json } = await dashboard();
    assert.equal(json.uid, 'portaria-gateway');
    assert.ok(json.title);
    const datasource = json.templating.list.find((v) => v.name === 'datasource');
    assert.deepEqual([datasource?.type, datasource?.query], ['datasource', 'prometheus']);
    const ids = json.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length);
    const panels = json.panels.filter((p) => p.type !== 'row');
    assert.ok(panels.length >= 20, `${panels.length} panels`);
    for (const panel of panels) {
      assert.ok((panel.targets ?? []).length > 0, `${panel.title}: no query`);
      assert.equal(panel.datasource?.uid, DATASOURCE_UID, panel.title);
      assert.ok(panel.gridPos.x + panel.gridPos.w <= 24, `${panel.title}: outside the grid`);
      for (const target of panel.targets ?? []) {
        assert.ok(target.expr.trim(), `${panel.title}: empty query`);
        assert.equal(target.datasource.uid, DATASOURCE_UID, panel.title);
        assert.match(target.expr, /namespace=~"\$namespace",job=~"\$job"/, panel.title);
      }
    }
  });

  test('panels for the process (standard Node.js names), event-loop lag, dropped log writes and WebSocket tunnels', async () => {
    const { json } = await dashboard();
    const queries = (title: string) => {
      const panel = json.panels.find((p) => p.title === title);
      assert.ok(panel, `a panel "${title}"`);
      return (panel.targets ?? []).map((t) => t.expr).join('\n');
    };
    assert.match(queries('CPU'), /\bprocess_cpu_seconds_total\{/);
    assert.match(queries('Resident memory'), /\bprocess_resident_memory_bytes\{/);
    assert.match(queries('Event-loop lag'), /\bnodejs_eventloop_lag_p99_seconds\{/);
    assert.match(queries('Dropped log writes'), /\bportaria_log_dropped_writes_total\{/);
    assert.match(queries('Open WebSocket tunnels'), /\bportaria_websocket_tunnels_open\{/);
    assert.match(
      queries('WebSocket tunnels opened and closed'),
      /portaria_websocket_closed_total\{/,
    );
  });

  test('the ConfigMap carries the dashboard with the sidecar label, where the sidecar looks', async () => {
    const map = find(await monitoringScenario(), 'ConfigMap', '-dashboard') as unknown as {
      metadata: {
        namespace: string;
        labels: Record<string, string>;
        annotations: Record<string, string>;
      };
      data: Record<string, string>;
    };
    assert.equal(map.metadata.labels.grafana_dashboard, '1');
    assert.equal(map.metadata.namespace, 'monitoring');
    assert.equal(map.metadata.annotations.grafana_folder, 'Gateways');
    assert.deepEqual(JSON.parse(map.data['portaria.json'] as string), (await dashboard()).json);
  });
});

const PROMQL_KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'inf',
  'nan',
]);

/** Metric names a PromQL expression selects (not functions, labels, keywords, strings). */
export function promqlMetricNames(expr: string): string[] {
  let text = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/'(?:[^'\\]|\\.)*'/g, "''");
  text = text.replace(/\{[^}]*\}/g, ' ').replace(/\[[^\]]*\]/g, ' ');
  text = text.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const match of text.matchAll(/(?<![A-Za-z0-9_:.$])[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = match[0];
    const rest = text.slice((match.index ?? 0) + word.length).trimStart();
    if (rest.startsWith('(') || PROMQL_KEYWORDS.has(word.toLowerCase())) continue;
    names.add(word);
  }
  return [...names];
}

/** Every series name the registry can produce (histograms: _bucket, _sum, _count). */
function exposedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const match of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = match as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
  }
  return names;
}

describe('metrics used by the alerts and the dashboard', () => {
  test('the PromQL metric-name extractor', () => {
    assert.deepEqual(
      promqlMetricNames(
        'histogram_quantile(0.99, sum by (le, route) (rate(a_bucket{job=~"$job",x="b c"}[$__rate_interval]))) / on (job) group_left b_total > 1e3 and c offset 5m',
      ),
      ['a_bucket', 'b_total', 'c'],
    );
  });

  test('every metric queried is exposed by the gateway (or listed in EXPECTED_MISSING_METRICS)', async (t) => {
    const gateway = await startGateway(t);
    // Touch the per-request series so they are published.
    await gateway.token();
    const exposed = exposedNames(await scrape(gateway.adminUrl));
    assert.ok(exposed.has('portaria_http_requests_total'), 'the registry was scraped');

    const queried = new Map<string, string>(); // name → where
    for (const rule of rulesOf(await monitoringScenario())) {
      for (const name of promqlMetricNames(String(rule.expr))) {
        if (!PROMETHEUS_SERIES.has(name)) queried.set(name, `alert ${rule.alert}`);
      }
    }
    const { json } = await dashboard();
    for (const panel of json.panels) {
      for (const target of panel.targets ?? []) {
        for (const name of promqlMetricNames(target.expr))
          queried.set(name, `panel "${panel.title}"`);
      }
    }
    for (const variable of json.templating.list) {
      const query = JSON.stringify(variable.query);
      for (const match of query.matchAll(/label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)/g)) {
        queried.set(match[1] as string, `variable ${variable.name}`);
      }
    }
    // Ours, or prom-client's process and Node.js metrics under their standard names.
    for (const name of queried.keys())
      assert.match(name, /^(portaria|process|nodejs)_/, `${name} (${queried.get(name)})`);

    const missing = [...queried.keys()].filter((n) => !exposed.has(n)).sort();
    const stale = EXPECTED_MISSING_METRICS.filter((n) => exposed.has(n));
    assert.deepEqual(
      stale,
      [],
      'these metrics exist now: delete them from EXPECTED_MISSING_METRICS',
    );
    assert.deepEqual(
      missing.map((n) => `${n} (${queried.get(n)})`),
      [...EXPECTED_MISSING_METRICS].sort().map((n) => `${n} (${queried.get(n)})`),
      'queried metrics the gateway does not expose',
    );
  });
});
