/**
 * The chart's `profile` value (docs/fapi.md): rendered into the gateway's configuration,
 * the `fapi-br` scenario accepted by the gateway's own loader, its clients file and
 * signing key held to the profile as the gateway holds them, and `config.profile`
 * refused (the chart owns it).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/loadConfig.js';
import { loadProfiledClients, loadProfiledKeyRing } from '../../src/profile/profileLoads.js';
import { find, installed, type K8sObject, RELEASE, render, SCENARIOS, template } from './helm.js';

function scenario(name: string): string {
  const found = SCENARIOS.find((s) => s.name === name);
  assert.ok(found, `no scenario ${name}`);
  return found.file;
}

function configText(objects: readonly K8sObject[]): string {
  const map = find(objects, 'ConfigMap', RELEASE) as unknown as { data: Record<string, string> };
  return map.data['portaria.yaml'] as string;
}

describe('the chart under profile fapi-br', () => {
  test('the fapi-br scenario renders profile: fapi-br, and the gateway loads it with its effects', async (t) => {
    const objects = await render({ files: [scenario('fapi-br')] });
    const text = configText(objects);
    assert.equal((parse(text) as Record<string, unknown>).profile, 'fapi-br');
    const dir = await mkdtemp(join(tmpdir(), 'portaria-chart-fapi-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'portaria.yaml');
    await writeFile(file, text);
    const config = await loadConfig({ file, env: {}, cwd: dir });
    assert.equal(config.profile, 'fapi-br');
    assert.equal(config.server.tls.policy, 'fapi');
    assert.deepEqual(
      config.routes.map((r) => [r.id, r.requireCertificateBound]),
      [['accounts', true]],
    );

    // The chart-made Secret's clients file and key, loaded as the pod loads them.
    const secret = installed(objects).find((o) => o.kind === 'Secret') as unknown as {
      data: Record<string, string>;
    };
    for (const [name, value] of Object.entries(secret.data)) {
      await writeFile(join(dir, name), Buffer.from(value, 'base64'));
    }
    const files = { clients: { file: join(dir, 'clients.json') }, keys: { ...config.keys, dir } };
    const clients = await loadProfiledClients({ ...config, ...files });
    const client = clients.get('helm-test');
    assert.equal(client?.requireCertificateBound, true);
    const ring = await loadProfiledKeyRing({ ...config, ...files });
    assert.equal(ring.signingKey.alg, 'PS256');
  });

  test('without the value the configuration names no profile', async () => {
    const objects = await render({ files: [scenario('tls')] });
    assert.equal((parse(configText(objects)) as Record<string, unknown>).profile, undefined);
  });

  test('fail guards: fapi-br without a certificate source, or with TLS and another policy', async () => {
    const fapi = scenario('fapi-br');
    const noSource = await template({
      files: [fapi],
      values: [{ config: { clientCertificate: { source: 'none' } } }],
    });
    assert.notEqual(noSource.code, 0);
    assert.match(noSource.stderr, /profile: fapi-br binds every token to a client certificate/);
    const policy = await template({
      files: [fapi],
      values: [{ config: { server: { tls: { policy: 'default' } } } }],
    });
    assert.notEqual(policy.code, 0);
    assert.match(
      policy.stderr,
      /profile: fapi-br with tls\.enabled needs config\.server\.tls\.policy: fapi/,
    );
  });

  test('refuses config.profile (the chart sets it from profile) and an unknown profile', async () => {
    const owned = await template({ values: [{ config: { profile: 'fapi-br' } }] });
    assert.notEqual(owned.code, 0);
    assert.match(owned.stderr, /config/);
    assert.match(owned.stderr, /profile/);
    const unknown = await template({ values: [{ profile: 'fapi' }] });
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /profile/);
  });
});
