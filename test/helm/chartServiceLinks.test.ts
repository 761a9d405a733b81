/**
 * Kubernetes' service-link variables (docs/deploying.md): the chart turns them off
 * (`enableServiceLinks: false`), and the gateway and `portaria config check` still start
 * with every variable Kubernetes derives from the Services the chart renders, for several
 * release names, beside another team's Services named `portaria-…` (an IPv6 cluster IP,
 * a UDP port, an unnamed port), in mode proxy and in mode authorizer (whose Service
 * `portaria-authorizer` gives `PORTARIA_AUTHORIZER_PORT=tcp://…` and the like, while the
 * settings are `PORTARIA_AUTHORIZER__PORT`). No such variable is a name the gateway reads.
 * A genuine typo next to them is still refused with the nearest name, and a retired short
 * name with a plain value names its replacement.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import {
  NON_SETTING_VARIABLES,
  settingVariables,
  VARIABLE_ALIASES,
} from '../../src/config/environment.js';
import { loadConfig } from '../../src/config/loadConfig.js';
import { isServiceLink } from '../../src/config/serviceLinks.js';
import { generateSigningKey, writeSigningKey } from '../../src/keys/generateKey.js';
import { runGateway } from '../helpers/process.js';
import { runCli } from '../helpers/runCli.js';
import { find, render } from './helm.js';
import { type ServiceShape, serviceLinkVariables, servicesOf } from './serviceLinkVariables.js';

/** Release names and the Services the chart renders for each. */
const RELEASES: readonly { release: string; services: readonly string[] }[] = [
  { release: 'portaria', services: ['portaria-admin', 'portaria'] },
  { release: 'portaria-prod', services: ['portaria-prod-admin', 'portaria-prod'] },
  { release: 'gw', services: ['gw-portaria-admin', 'gw-portaria'] },
];

/** Mode authorizer adds `<full name>-authorizer`: PORTARIA_AUTHORIZER_* for release portaria. */
const AUTHORIZER_VALUES = {
  mode: 'authorizer',
  config: { server: { trustedProxies: ['10.0.0.0/8'] } },
};
const AUTHORIZER_RELEASES: readonly { release: string; services: readonly string[] }[] = [
  { release: 'portaria', services: ['portaria-admin', 'portaria-authorizer', 'portaria'] },
  {
    release: 'portaria-prod',
    services: ['portaria-prod-admin', 'portaria-prod-authorizer', 'portaria-prod'],
  },
  { release: 'gw', services: ['gw-portaria-admin', 'gw-portaria-authorizer', 'gw-portaria'] },
];

/** Another team's Services in the same namespace, and the API server's. */
const NEIGHBOURS: readonly ServiceShape[] = [
  {
    name: 'portaria-server',
    clusterIP: 'fd00:10:96::2a',
    ports: [
      { name: 'grpc-web', port: 8080, protocol: 'TCP' },
      { name: 'dns', port: 53, protocol: 'UDP' },
    ],
  },
  { name: 'portaria-legacy', clusterIP: '10.96.7.7', ports: [{ port: 443 }] },
  { name: 'kubernetes', clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443 }] },
];

/**
 * A production configuration (keys, one client), every listener on loopback port 0; with
 * `decisions`, in mode both (the decision listener too).
 */
async function gatewayFiles(
  t: TestContext,
  decisions = false,
): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-links-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeSigningKey(join(dir, 'keys'), await generateSigningKey('ES256', new Date()));
  const secret = hashGeneratedSecret('acme-secret-0123456789abcdefghijklmnopqrstu');
  await writeFile(
    join(dir, 'clients.json'),
    JSON.stringify({ clients: [{ id: 'acme', secrets: [{ hash: secret }], scopes: ['a'] }] }),
  );
  const file = join(dir, 'portaria.yaml');
  await writeFile(
    file,
    JSON.stringify({
      server: { host: '127.0.0.1', port: 0 },
      admin: { host: '127.0.0.1', port: 0 },
      keys: { dir: 'keys' },
      clients: { file: 'clients.json' },
      revocation: { file: 'revocations.log' },
      upstream: { default: { upstream: 'http://127.0.0.1:9' } },
      ...(decisions
        ? {
            mode: 'both',
            server: { host: '127.0.0.1', port: 0, trustedProxies: ['127.0.0.1'] },
            authorizer: { host: '127.0.0.1', port: 0, grpc: { enabled: false } },
          }
        : {}),
    }),
  );
  return { dir, file };
}

/** The variables a pod of `release` gets: the chart's Services and the neighbours'. */
async function podVariables(
  release: string,
  services: readonly string[],
  values: readonly Record<string, unknown>[] = [],
) {
  const objects = await render({ release, values });
  const own = servicesOf(objects, ['10.96.0.12', '10.96.0.13', '10.96.0.14']);
  assert.deepEqual(
    own.map((s) => s.name),
    services,
  );
  const ownVariables = serviceLinkVariables(own);
  return { objects, ownVariables, env: { ...ownVariables, ...serviceLinkVariables(NEIGHBOURS) } };
}

/** Starts the gateway process; resolves with its public URL once it listens. */
async function startedGateway(t: TestContext, file: string, env: Record<string, string>) {
  const gateway = runGateway(t, ['--config', file], { env });
  const out = await gateway.waitForOutput('stdout', /"msg":"listening"/, 15_000);
  const line = out.split('\n').find((l) => l.includes('"msg":"listening"')) ?? '';
  return { gateway, publicUrl: (JSON.parse(line) as { publicUrl: string }).publicUrl };
}

/** The decision listener's URL, from the line the gateway logs once it answers decisions. */
async function decisionUrl(gateway: ReturnType<typeof runGateway>): Promise<string> {
  const out = await gateway.waitForOutput('stdout', /"msg":"answering decisions"/, 15_000);
  const line = out.split('\n').find((l) => l.includes('"msg":"answering decisions"')) ?? '';
  return (JSON.parse(line) as { authorizerUrl: string }).authorizerUrl;
}

/** Every name a gateway reads as a setting (variables, aliases, the file and CLI ones). */
const READ_NAMES = new Set([
  ...settingVariables().map((v) => v.name),
  ...Object.keys(VARIABLE_ALIASES),
  ...Object.keys(NON_SETTING_VARIABLES),
]);

describe('Kubernetes service links', () => {
  for (const { release, services } of RELEASES) {
    test(`release ${release}: the chart turns service links off`, async () => {
      const { objects } = await podVariables(release, services);
      const deployment = find(objects, 'Deployment') as unknown as IDeployment;
      assert.equal(deployment.spec?.template.spec?.enableServiceLinks, false);
    });

    test(`release ${release}: config check and the gateway start with every service link`, async (t) => {
      const { ownVariables, env } = await podVariables(release, services);
      // Two Services of one port each: eight variables apiece.
      assert.equal(Object.keys(ownVariables).length, 16);
      const { dir, file } = await gatewayFiles(t);
      const check = await runCli(['config', 'check', '--config', file], { cwd: dir, env });
      assert.equal(check.stderr, '');
      assert.equal(check.code, 0);
      assert.match(check.stdout, /^ok: /);

      const { gateway, publicUrl } = await startedGateway(t, file, env);
      const jwks = await fetch(`${publicUrl}/.well-known/jwks.json`);
      assert.equal(jwks.status, 200);
      await jwks.arrayBuffer();
      gateway.child.kill('SIGTERM');
      assert.deepEqual(await gateway.exited, { code: 0, signal: null });
      assert.doesNotMatch(gateway.stdout() + gateway.stderr(), /SERVICE_HOST|tcp:\/\//);
    });
  }

  for (const { release, services } of AUTHORIZER_RELEASES) {
    test(`release ${release}, mode authorizer: config check and the gateway start with every service link`, async (t) => {
      const { objects, ownVariables, env } = await podVariables(release, services, [
        AUTHORIZER_VALUES,
      ]);
      const deployment = find(objects, 'Deployment') as unknown as IDeployment;
      assert.equal(deployment.spec?.template.spec?.enableServiceLinks, false);
      // Two Services of one port (eight variables each), the authorizer's of two: 13.
      assert.equal(Object.keys(ownVariables).length, 29);
      const prefix = services[1]?.replaceAll('-', '_').toUpperCase();
      assert.equal(ownVariables[`${prefix}_PORT`], 'tcp://10.96.0.13:8181');
      assert.equal(ownVariables[`${prefix}_SERVICE_PORT_GRPC_DECISIONS`], '9191');
      assert.equal(ownVariables[`${prefix}_PORT_9191_TCP_ADDR`], '10.96.0.13');

      const { dir, file } = await gatewayFiles(t, true);
      const check = await runCli(['config', 'check', '--config', file], { cwd: dir, env });
      assert.equal(check.stderr, '');
      assert.equal(check.code, 0);

      const { gateway, publicUrl } = await startedGateway(t, file, env);
      const jwks = await fetch(`${publicUrl}/.well-known/jwks.json`);
      assert.equal(jwks.status, 200);
      await jwks.arrayBuffer();
      // The decision listener is where the file put it, not where a link points.
      const decision = await fetch(`${await decisionUrl(gateway)}/nginx`, {
        headers: { 'x-original-method': 'GET', 'x-original-uri': '/v1/orders' },
      });
      assert.equal(decision.status, 401);
      await decision.arrayBuffer();
      gateway.child.kill('SIGTERM');
      assert.deepEqual(await gateway.exited, { code: 0, signal: null });
      assert.doesNotMatch(gateway.stdout() + gateway.stderr(), /SERVICE_HOST|tcp:\/\//);
    });
  }

  test("no variable Kubernetes derives from the chart's Services is one the gateway reads", async () => {
    const cases = [
      ...RELEASES.map((r) => ({ ...r, values: [] as Record<string, unknown>[] })),
      ...AUTHORIZER_RELEASES.map((r) => ({ ...r, values: [AUTHORIZER_VALUES] })),
    ];
    for (const { release, services, values } of cases) {
      const { ownVariables } = await podVariables(release, services, values);
      for (const [name, value] of Object.entries(ownVariables)) {
        assert.ok(!READ_NAMES.has(name), `${release}: ${name} is read as a setting`);
        // The two retired short names are among them (release portaria): told by their value.
        assert.ok(isServiceLink(name, value), `${release}: ${name}=${value} not taken for a link`);
      }
    }
  });

  test('the authorizer settings keep their double-underscore variables beside the links', async (t) => {
    const { env } = await podVariables('portaria', AUTHORIZER_RELEASES[0]?.services ?? [], [
      AUTHORIZER_VALUES,
    ]);
    assert.equal(env.PORTARIA_AUTHORIZER_PORT, 'tcp://10.96.0.13:8181');
    for (const name of ['PORTARIA_AUTHORIZER__PORT', 'PORTARIA_AUTHORIZER__GRPC__PORT']) {
      assert.ok(READ_NAMES.has(name), name);
      assert.equal(env[name], undefined, `${name} is no service link`);
      assert.equal(isServiceLink(name, 'tcp://10.96.0.13:8181'), false, name);
    }
    const { dir, file } = await gatewayFiles(t, true);
    const config = await loadConfig({
      file,
      cwd: dir,
      env: { ...env, PORTARIA_AUTHORIZER__PORT: '8282', PORTARIA_AUTHORIZER__GRPC__PORT: '9292' },
    });
    assert.equal(config.authorizer.port, 8282);
    assert.equal(config.authorizer.grpc.port, 9292);
    // A plain value under the single-underscore name is a typo, not a link: refused.
    await assert.rejects(
      loadConfig({ file, cwd: dir, env: { ...env, PORTARIA_AUTHORIZER_PORT: '8282' } }),
      /PORTARIA_AUTHORIZER_PORT: no setting has this variable \(did you mean PORTARIA_AUTHORIZER__PORT\?\)/,
    );
  });

  test('a typo next to the service links is refused with the nearest name, by both', async (t) => {
    const { env } = await podVariables('portaria', ['portaria-admin', 'portaria']);
    const { dir, file } = await gatewayFiles(t);
    const withTypo = { ...env, PORTARIA_SERVER__PROT: '8443' };
    const problem =
      '  - PORTARIA_SERVER__PROT: no setting has this variable (did you mean PORTARIA_SERVER__PORT?)\n';
    const check = await runCli(['config', 'check', '--config', file], { cwd: dir, env: withTypo });
    assert.equal(check.code, 1);
    assert.equal(
      check.stderr,
      `portaria: config check: invalid configuration (${file}):\n${problem}`,
    );

    const gateway = runGateway(t, ['--config', file], { env: withTypo });
    assert.deepEqual(await gateway.exited, { code: 1, signal: null });
    assert.ok(gateway.stderr().endsWith(problem), gateway.stderr());
    assert.equal(gateway.stderr().split('\n  - ').length, 2, 'one problem only');
  });

  test('a retired short name set to a port is refused naming its replacement, by both', async (t) => {
    const { dir, file } = await gatewayFiles(t);
    const env = { PORTARIA_PORT: '8443', PORTARIA_ADMIN_PORT: '9443' };
    const problems =
      '  - PORTARIA_PORT: no longer read (Kubernetes sets this name for its Services); set PORTARIA_SERVER__PORT\n' +
      '  - PORTARIA_ADMIN_PORT: no longer read (Kubernetes sets this name for its Services); set PORTARIA_ADMIN__PORT\n';
    const check = await runCli(['config', 'check', '--config', file], { cwd: dir, env });
    assert.equal(check.code, 1);
    assert.equal(
      check.stderr,
      `portaria: config check: invalid configuration (${file}):\n${problems}`,
    );

    const gateway = runGateway(t, ['--config', file], { env });
    assert.deepEqual(await gateway.exited, { code: 1, signal: null });
    assert.ok(gateway.stderr().endsWith(problems), gateway.stderr());
  });
});
