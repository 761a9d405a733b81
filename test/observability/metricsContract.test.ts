/**
 * The metrics are a contract with dashboards and alerts: the metrics table of docs/operating.md and
 * the live registry must agree (name, type, labels), and the real `/metrics` output must
 * pass `promtool check metrics` (Debian package `prometheus`; the test fails without it).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/fixture.js';
import { scrape } from '../helpers/metrics.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const PROMTOOL = process.env.PROMTOOL ?? 'promtool';

interface Documented {
  readonly type: string;
  readonly labels: ReadonlySet<string>;
}

/** Rows of the documented metrics table: `| \`name\` | type | \`a\`, \`b\` | meaning |`. */
function readmeMetrics(): Map<string, Documented> {
  const readme = readFileSync(join(ROOT, 'docs', 'operating.md'), 'utf8');
  const rows = new Map<string, Documented>();
  for (const line of readme.split('\n')) {
    const match =
      /^\| `((?:portaria|process|nodejs)_[a-z0-9_]+)` \| (counter|gauge|histogram|summary) \|([^|]*)\|/.exec(
        line,
      );
    if (!match) continue;
    const [, name = '', type = '', labelText = ''] = match;
    assert.ok(!rows.has(name), `docs/operating.md lists ${name} twice`);
    const labels = new Set([...labelText.matchAll(/`([a-z_]+)`/g)].map((m) => m[1] ?? ''));
    rows.set(name, { type, labels });
  }
  return rows;
}

/** Name → type and the label names seen on its samples, from an exposition. */
function exposed(text: string): Map<string, { type: string; labels: Set<string> }> {
  const metrics = new Map<string, { type: string; labels: Set<string> }>();
  for (const line of text.split('\n')) {
    const typeLine = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (typeLine) {
      metrics.set(typeLine[1] ?? '', { type: typeLine[2] ?? '', labels: new Set() });
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? /.exec(line);
    if (!sampleLine) continue;
    const series = sampleLine[1] ?? '';
    const base = metrics.has(series) ? series : series.replace(/_(bucket|sum|count)$/, '');
    const entry = metrics.get(base);
    assert.ok(entry, `sample ${series} has no # TYPE line`);
    for (const pair of (sampleLine[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) {
      const label = pair[1] ?? '';
      if (label !== 'le' && label !== 'quantile') entry.labels.add(label);
    }
  }
  return metrics;
}

async function busyGatewayMetrics(
  t: Parameters<typeof startGateway>[0],
  settings: Record<string, unknown> = {},
): Promise<string> {
  const gateway = await startGateway(t, { settings: () => settings });
  const token = await gateway.token();
  const requests: RequestInit[] = [{ headers: { authorization: `Bearer ${token}` } }, {}];
  for (const init of requests) {
    const res = await fetch(`${gateway.url}/v1/anything`, init);
    await res.arrayBuffer();
  }
  return scrape(gateway.adminUrl);
}

describe('metrics contract', () => {
  test('the documented metrics table and the registry list the same metrics, types and labels', async (t) => {
    const documented = readmeMetrics();
    const live = exposed(await busyGatewayMetrics(t));
    assert.ok(documented.size >= 10, 'the docs/operating.md metrics table was not found');
    assert.deepEqual([...live.keys()].sort(), [...documented.keys()].sort());
    for (const [name, { type, labels }] of live) {
      const doc = documented.get(name);
      assert.equal(
        doc?.type,
        type,
        `${name}: docs/operating.md says ${doc?.type}, registry says ${type}`,
      );
      for (const label of labels) {
        assert.ok(doc?.labels.has(label), `${name}: label ${label} is not in docs/operating.md`);
      }
    }
  });

  test('upstream latency has series only for routes that forwarded; durations have buckets past the 30 s timeout', async (t) => {
    const text = await busyGatewayMetrics(t);
    const upstreamRoutes = new Set(
      [...text.matchAll(/^portaria_upstream_duration_seconds_count\{route="([^"]+)"\}/gm)].map(
        (m) => m[1],
      ),
    );
    // A token request, a forwarded request and a refused one: only `default` forwarded.
    assert.deepEqual([...upstreamRoutes], ['default']);
    assert.match(text, /^portaria_http_request_duration_seconds_bucket\{le="30",route="token"\} /m);
    assert.match(text, /^portaria_http_request_duration_seconds_bucket\{le="60",route="token"\} /m);
    assert.match(text, /^portaria_upstream_duration_seconds_bucket\{le="60",route="default"\} 1$/m);
  });

  test('every metric is prefixed portaria_, or is a process or Node.js metric under its standard name, and has help text', async (t) => {
    const text = await busyGatewayMetrics(t);
    for (const line of text.split('\n')) {
      const help = /^# HELP (\S+) (.*)$/.exec(line);
      if (help) {
        assert.match(help[1] ?? '', /^(portaria|process|nodejs)_[a-z0-9_]+$/);
        assert.ok((help[2] ?? '').length > 10, `${help[1]} has no useful help text`);
      }
    }
  });

  test('process and Node.js metrics: the standard names by default, metrics.processMetricsPrefix when set', async (t) => {
    const standard = exposed(await busyGatewayMetrics(t));
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_gc_duration_seconds',
    ]) {
      assert.ok(standard.has(name), name);
      assert.ok(!standard.has(`portaria_${name}`), `portaria_${name}`);
    }
    const prefixed = exposed(
      await busyGatewayMetrics(t, { metrics: { processMetricsPrefix: 'portaria_' } }),
    );
    assert.ok(prefixed.has('portaria_process_cpu_seconds_total'));
    assert.ok(prefixed.has('portaria_nodejs_eventloop_lag_seconds'));
    assert.deepEqual(
      [...prefixed.keys()].filter((n) => /^(process|nodejs)_/.test(n)),
      [],
      'nothing left under the standard names',
    );
    assert.equal(
      [...prefixed.keys()].filter((n) => n.includes('nodejs_active_') && n.endsWith('_total'))
        .length,
      0,
      'the *_total gauges stay out under a prefix too',
    );
  });

  test('the real /metrics output passes promtool check metrics', async (t) => {
    const version = spawnSync(PROMTOOL, ['--version']);
    assert.equal(
      version.status,
      0,
      `${PROMTOOL} not found: install the Debian package prometheus (npm test does as root)`,
    );
    const text = await busyGatewayMetrics(t);
    const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(check.status, 0, `promtool: ${check.stdout}${check.stderr}`);
    assert.equal(`${check.stdout}${check.stderr}`.trim(), '');
  });
});
