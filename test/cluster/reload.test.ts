/**
 * A group (`server.workers` > 1) reloads on every worker: a changed clients file is seen
 * by each worker's own watch, and SIGHUP to the primary is passed on to each worker. The
 * group's /metrics counts one reload of the group once, not once per worker.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { metric } from '../helpers/metrics.js';
import { waitForStatus } from '../helpers/process.js';
import {
  type Group,
  SECRET,
  startGroup,
  startUpstream,
  tokenFor,
  waitForLines,
} from './groupGateway.js';

const WORKERS = 3;

/** Adds client `late` (secret SECRET) to the group's clients file. */
async function addClient(group: Group): Promise<void> {
  const file = join(group.dir, 'clients.json');
  const clients = JSON.parse(await readFile(file, 'utf8')) as { clients: unknown[] };
  clients.clients.push({
    id: 'late',
    secrets: [{ hash: hashGeneratedSecret(SECRET) }],
    scopes: ['orders:read'],
  });
  await writeFile(file, JSON.stringify(clients));
}

/** Token requests for `late`, each on a new connection (so every worker answers some). */
async function lateTokens(group: Group, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await tokenFor(group, 'late')).status);
  return statuses;
}

const clientsReloaded = (l: Record<string, unknown>) =>
  l.msg === 'reloaded' && l.source === 'clients';

const CLIENTS_APPLIED = 'portaria_config_reload_total{source="clients",outcome="applied"}';
const CLIENTS_FAILED = 'portaria_config_reload_total{source="clients",outcome="failed"}';

describe('reloads in a group of workers', () => {
  test('a changed clients file is reloaded by every worker', async (t) => {
    const upstream = await startUpstream(t);
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
      reload: { pollIntervalMs: 500 },
    });
    assert.equal((await tokenFor(group, 'late')).status, 401);
    await addClient(group);
    await waitForLines(group, 'every worker reloaded', clientsReloaded, WORKERS);
    assert.deepEqual(new Set(await lateTokens(group, 3 * WORKERS)), new Set([200]));
    assert.equal(await metric(group.files.adminUrl, CLIENTS_APPLIED), 1, 'one change, one reload');
  });

  test('SIGHUP to the primary reloads every worker', async (t) => {
    const upstream = await startUpstream(t);
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
      reload: { enabled: false },
    });
    await addClient(group);
    // No watch: the file is not read again until the signal.
    assert.deepEqual(new Set(await lateTokens(group, WORKERS)), new Set([401]));
    group.child.kill('SIGHUP');
    const reloaded = await waitForLines(group, 'every worker reloaded', clientsReloaded, WORKERS);
    assert.equal(reloaded.length, WORKERS);
    assert.deepEqual(new Set(await lateTokens(group, 3 * WORKERS)), new Set([200]));
    assert.equal(group.child.exitCode, null, 'the primary runs on');
  });

  test('one reload of the group counts once in /metrics, and a replaced worker does not lower the count', async (t) => {
    const upstream = await startUpstream(t);
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
      reload: { enabled: false },
    });
    assert.equal(await metric(group.files.adminUrl, CLIENTS_APPLIED), 0);
    await addClient(group);
    group.child.kill('SIGHUP');
    await waitForLines(group, 'every worker reloaded', clientsReloaded, WORKERS);
    assert.equal(await metric(group.files.adminUrl, CLIENTS_APPLIED), 1);
    assert.equal(await metric(group.files.adminUrl, CLIENTS_FAILED), 0);

    // The replacement starts at 0; the workers that reloaded still say 1.
    const [victim] = group.workerPids();
    assert.ok(victim !== undefined);
    process.kill(victim, 'SIGKILL');
    await waitForLines(
      group,
      'the replacement started',
      (l) => l.msg === 'worker started',
      WORKERS + 1,
    );
    await waitForStatus(`${group.files.adminUrl}/readyz`, 200, 60_000);
    assert.equal(await metric(group.files.adminUrl, CLIENTS_APPLIED), 1);

    // The next reload: every worker, the replacement included, counts its second or first.
    const file = join(group.dir, 'clients.json');
    const clients = JSON.parse(await readFile(file, 'utf8')) as { clients: { id: string }[] };
    await writeFile(
      file,
      JSON.stringify({ clients: clients.clients.filter((c) => c.id !== 'late') }),
    );
    group.child.kill('SIGHUP');
    await waitForLines(group, 'every worker reloaded again', clientsReloaded, 2 * WORKERS);
    assert.equal(await metric(group.files.adminUrl, CLIENTS_APPLIED), 2);
  });
});
