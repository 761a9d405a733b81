/**
 * A group (`server.workers` > 1) has one /metrics, on the primary's admin listener: every
 * worker's counters and histograms summed, gauges every process reports alike not
 * multiplied, the group's own series, and an exposition promtool accepts.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { sample, scrape } from '../helpers/metrics.js';
import { accessToken, protectedRequests, startGroup, startUpstream } from './groupGateway.js';

const PROMTOOL = process.env.PROMTOOL ?? 'promtool';
const WORKERS = 3;
const REQUESTS = 45;

describe('metrics of a group of workers', () => {
  test('one /metrics: counters summed over the workers, gauges sensible, promtool-clean', async (t) => {
    const upstream = await startUpstream(t);
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
      revocation: { store: 'local', file: 'revocations.log' },
    });
    const token = await accessToken(group);
    const statuses = await protectedRequests(group, token, REQUESTS);
    assert.deepEqual(new Set(statuses), new Set([200]));
    const text = await scrape(group.files.adminUrl);
    const at = (series: string) => sample(text, series);

    // Counters and histograms: every request counted once, whichever worker answered.
    assert.equal(
      at('portaria_http_requests_total{route="default",method="safe",status_class="2xx"}'),
      REQUESTS,
    );
    assert.equal(at('portaria_http_request_duration_seconds_count{route="default"}'), REQUESTS);
    assert.equal(at('portaria_upstream_duration_seconds_count{route="default"}'), REQUESTS);
    assert.equal(at('portaria_token_requests_total{outcome="issued"}'), 1);
    assert.equal(at('portaria_http_requests_in_flight'), 0);
    // Each worker verified the token (concurrent first requests may each miss) and cached it.
    const misses = at('portaria_verify_cache_lookups_total{result="miss"}') ?? 0;
    const hits = at('portaria_verify_cache_lookups_total{result="hit"}') ?? 0;
    assert.equal(hits + misses, REQUESTS);
    assert.ok(misses >= WORKERS, `${misses} misses`);
    assert.equal(at('portaria_verify_cache_entries'), WORKERS);

    // Gauges every worker reports alike: the group's value, not WORKERS times it.
    assert.equal(at('portaria_signing_keys{state="active"}'), 1);
    assert.equal(at('portaria_revocation_entries'), 0);
    assert.equal(at('portaria_config_last_reload_successful{source="clients"}'), 1);

    // The group's own series.
    assert.equal(at('portaria_workers{state="configured"}'), WORKERS);
    assert.equal(at('portaria_workers{state="listening"}'), WORKERS);
    assert.equal(at('portaria_worker_restarts_total{cause="exit"}'), 0);
    assert.equal(at('portaria_worker_restarts_total{cause="signal"}'), 0);
    // One process metric from every process: the primary and the workers.
    assert.ok((at('process_resident_memory_bytes') ?? 0) > 0);

    const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(check.status, 0, `promtool: ${check.stdout}${check.stderr}`);
    assert.equal(`${check.stdout}${check.stderr}`.trim(), '');
  });
});
