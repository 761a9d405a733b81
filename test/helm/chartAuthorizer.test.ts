/**
 * The chart's `mode` and `authorizer` values (docs/deploying.md, "Authorizer mode"): the
 * decision ports on the container and on the ClusterIP Service `<full name>-authorizer`
 * (names and appProtocol a mesh reads), the gateway's configuration loaded by its own
 * loader, the NetworkPolicy rule, the guards (trustedProxies, shared ports, chart-owned
 * settings), nothing of it in proxy mode, and the `helm test` hook asking the rendered
 * gateway for decisions.
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, type TestContext, test } from 'node:test';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { IPod } from 'kubernetes-models/v1/Pod';
import type { IService } from 'kubernetes-models/v1/Service';
import { parse } from 'yaml';
import { createApp } from '../../src/app/createApp.js';
import { loadConfig } from '../../src/config/loadConfig.js';
import { configSchema } from '../../src/config/schema.js';
import { validateConfig } from '../../src/config/validateConfig.js';
import { startUpstream } from '../helpers/fixture.js';
import { runToEnd, tempDir } from '../helpers/process.js';
import {
  find,
  findAll,
  installed,
  type K8sObject,
  RELEASE,
  type RenderOptions,
  render,
  renderNotes,
  SCENARIOS,
  template,
} from './helm.js';
import { modelProblems, unknownFieldProblems } from './kubeValidate.js';
import { REPO_ROOT, VALUES_SCHEMA } from './paths.js';

const scenarioFile = (name: string): string => {
  const found = SCENARIOS.find((s) => s.name === name);
  assert.ok(found, `no scenario ${name}`);
  return found.file;
};
const authorizerScenario = (): RenderOptions => ({ files: [scenarioFile('authorizer')] });
const trusted = { config: { server: { trustedProxies: ['10.0.0.0/8'] } } };

function configText(objects: readonly K8sObject[]): string {
  const map = find(objects, 'ConfigMap', RELEASE) as unknown as { data: Record<string, string> };
  return map.data['portaria.yaml'] as string;
}

function containerPorts(objects: readonly K8sObject[]) {
  const deployment = find(objects, 'Deployment') as unknown as IDeployment;
  return (deployment.spec?.template.spec?.containers[0]?.ports ?? []).map((p) => ({
    name: p.name,
    containerPort: p.containerPort,
  }));
}

function servicePorts(service: K8sObject) {
  return ((service as unknown as IService).spec?.ports ?? []).map((p) => ({ ...p }));
}

describe('the chart in mode authorizer', () => {
  test('the authorizer scenario renders valid Kubernetes objects, with no unknown field', async () => {
    const objects = await render(authorizerScenario());
    assert.deepEqual(await modelProblems(objects), []);
    const both = await render({ values: [trusted, { mode: 'both' }] });
    const noGrpc = await render({
      files: [scenarioFile('authorizer')],
      values: [{ authorizer: { grpc: { enabled: false } } }],
    });
    assert.deepEqual(await modelProblems([...both, ...noGrpc]), []);
    assert.deepEqual(unknownFieldProblems({ authorizer: objects, both, noGrpc }), {
      authorizer: [],
      both: [],
      noGrpc: [],
    });
  });

  test('the Service <full name>-authorizer has the HTTP and gRPC decision ports, ClusterIP', async () => {
    const objects = await render({
      ...authorizerScenario(),
      values: [{ service: { type: 'LoadBalancer' } }],
    });
    const service = find(objects, 'Service', '-authorizer') as unknown as IService;
    assert.equal(service.metadata?.name, 'portaria-authorizer');
    assert.equal(service.spec?.type, 'ClusterIP', 'service.type never publishes decisions');
    assert.equal(service.metadata?.labels?.['app.kubernetes.io/component'], 'authorizer');
    assert.deepEqual(service.spec?.selector, {
      'app.kubernetes.io/name': 'portaria',
      'app.kubernetes.io/instance': RELEASE,
    });
    assert.deepEqual(servicePorts(service as unknown as K8sObject), [
      {
        name: 'decisions',
        port: 8181,
        targetPort: 'decisions',
        protocol: 'TCP',
        appProtocol: 'http',
      },
      {
        name: 'grpc-decisions',
        port: 9191,
        targetPort: 'grpc-decisions',
        protocol: 'TCP',
        appProtocol: 'grpc',
      },
    ]);
    // The public Service keeps the public port alone (it is the LoadBalancer here).
    const publicService = find(objects, 'Service', RELEASE) as unknown as IService;
    assert.equal(publicService.spec?.type, 'LoadBalancer');
    assert.deepEqual(
      publicService.spec?.ports?.map((p) => p.name),
      ['http'],
    );
    // Port names a mesh reads: at most 15 characters, gRPC ones prefixed grpc-.
    for (const port of service.spec?.ports ?? []) {
      assert.ok((port.name ?? '').length <= 15, port.name);
    }
  });

  test('the container exposes the decision ports the Service targets', async () => {
    const objects = await render(authorizerScenario());
    assert.deepEqual(containerPorts(objects), [
      { name: 'http', containerPort: 8080 },
      { name: 'admin', containerPort: 9091 },
      { name: 'decisions', containerPort: 8181 },
      { name: 'grpc-decisions', containerPort: 9191 },
    ]);
    const names = containerPorts(objects).map((p) => p.name);
    for (const service of findAll(objects, 'Service')) {
      for (const port of servicePorts(service)) {
        assert.ok(names.includes(port.targetPort as string), `${port.targetPort}`);
      }
    }
  });

  test('the configuration carries mode and the authorizer settings, and the gateway loads it', async (t) => {
    const objects = await render({
      ...authorizerScenario(),
      values: [
        {
          authorizer: {
            port: 8282,
            grpc: { port: 9292 },
            originalUriHeader: 'X-Original-Path',
          },
        },
      ],
    });
    const text = configText(objects);
    const raw = parse(text) as Record<string, unknown>;
    assert.equal(raw.mode, 'authorizer');
    assert.deepEqual(raw.authorizer, {
      host: '0.0.0.0',
      port: 8282,
      grpc: { enabled: true, port: 9292 },
      originalMethodHeader: 'X-Original-Method',
      originalUriHeader: 'X-Original-Path',
      cacheDecisions: { enabled: true, maxAgeSeconds: 5 },
    });
    assert.deepEqual(containerPorts(objects).slice(2), [
      { name: 'decisions', containerPort: 8282 },
      { name: 'grpc-decisions', containerPort: 9292 },
    ]);
    const service = find(objects, 'Service', '-authorizer');
    assert.deepEqual(
      servicePorts(service).map((p) => p.port),
      [8282, 9292],
    );

    const dir = await tempDir(t, 'portaria-chart-authorizer-');
    const file = join(dir, 'portaria.yaml');
    await writeFile(file, text);
    const config = await loadConfig({ file, env: {}, cwd: dir });
    assert.equal(config.mode, 'authorizer');
    assert.equal(config.authorizer.port, 8282);
    assert.equal(config.authorizer.grpc.port, 9292);
    assert.deepEqual(config.authorizer.cacheDecisions, { enabled: true, maxAgeSeconds: 5 });
    assert.equal(config.routes[0]?.id, 'orders');
  });

  test('with grpc.enabled false there is no gRPC port anywhere', async () => {
    const objects = await render({
      ...authorizerScenario(),
      values: [{ authorizer: { grpc: { enabled: false } } }],
    });
    assert.deepEqual(
      servicePorts(find(objects, 'Service', '-authorizer')).map((p) => p.name),
      ['decisions'],
    );
    assert.deepEqual(
      containerPorts(objects).map((p) => p.name),
      ['http', 'admin', 'decisions'],
    );
    const raw = parse(configText(objects)) as { authorizer: { grpc: unknown } };
    assert.deepEqual(raw.authorizer.grpc, { enabled: false, port: 9191 });
    assert.doesNotMatch(JSON.stringify(find(objects, 'NetworkPolicy')), /grpc-decisions/);
  });

  test('the NetworkPolicy admits decisionsFrom (and the test pod) on the decision ports', async () => {
    const objects = await render(authorizerScenario());
    const policy = find(objects, 'NetworkPolicy') as unknown as INetworkPolicy;
    const rule = policy.spec?.ingress?.find((r) => r.ports?.some((p) => p.port === 'decisions'));
    assert.ok(rule, 'a rule for the decision ports');
    assert.deepEqual(
      rule.ports?.map((p) => p.port),
      ['decisions', 'grpc-decisions'],
    );
    assert.deepEqual(rule.from, [
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } },
      {
        podSelector: {
          matchLabels: {
            'app.kubernetes.io/name': 'portaria-test',
            'app.kubernetes.io/instance': RELEASE,
          },
        },
      },
    ]);
    // Without decisionsFrom: open to every peer (the gateway answers trustedProxies only).
    const open = await render({
      ...authorizerScenario(),
      values: [{ networkPolicy: { decisionsFrom: [] } }],
    });
    const openRule = (find(open, 'NetworkPolicy') as unknown as INetworkPolicy).spec?.ingress?.find(
      (r) => r.ports?.some((p) => p.port === 'decisions'),
    );
    assert.ok(openRule);
    assert.equal(openRule.from, undefined);
  });

  test('NOTES.txt names the decision addresses', async () => {
    const notes = await renderNotes(authorizerScenario());
    assert.match(
      notes,
      /ingress-nginx auth-url: http:\/\/portaria-authorizer\.portaria\.svc\.cluster\.local:8181\/nginx/,
    );
    assert.match(
      notes,
      /Traefik forwardAuth: +http:\/\/portaria-authorizer\.portaria\.svc\.cluster\.local:8181\/traefik/,
    );
    assert.match(notes, /portaria-authorizer\.portaria\.svc\.cluster\.local port 9191 \(gRPC\)/);
    assert.doesNotMatch(await renderNotes(), /Decision listeners/);
  });
});

describe("the deploying page's authorizer examples", () => {
  test('the values example renders and the gateway loads it; the examples name the chart-made addresses', async (t) => {
    const page = await readFile(join(REPO_ROOT, 'docs', 'deploying.md'), 'utf8');
    const section = page.slice(page.indexOf('## Authorizer mode'));
    const example = /```yaml\n# values\.yaml\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(example, 'the Authorizer mode section has its values.yaml example');
    const objects = await render({ values: [parse(example) as Record<string, unknown>] });
    const dir = await tempDir(t, 'portaria-chart-authorizer-doc-');
    const file = join(dir, 'portaria.yaml');
    await writeFile(file, configText(objects));
    const config = await loadConfig({ file, env: {}, cwd: dir });
    assert.equal(config.mode, 'authorizer');
    // The addresses the proxies are given are the Service's, with its ports.
    const service = find(objects, 'Service', '-authorizer');
    const host = `${service.metadata.name}.${service.metadata.namespace}.svc.cluster.local`;
    const [http, grpc] = servicePorts(service).map((p) => p.port);
    for (const address of [`http://${host}:${http}/nginx`, `http://${host}:${http}/traefik`]) {
      assert.ok(section.includes(address), address);
    }
    assert.ok(section.includes(`service: ${host}\n        port: ${grpc}`), 'Istio provider');
    // Every default identity header is listed by each proxy.
    const identity = Object.values(config.identityHeaders);
    assert.deepEqual(identity, ['X-Client-Id', 'X-Token-Scope', 'X-Token-Jti']);
    assert.ok(section.includes(`auth-response-headers: "${identity.join(',')}"`), 'nginx');
    const traefik = identity.map((h) => `      - ${h}\n`).join('');
    assert.ok(section.includes(`authResponseHeaders:\n${traefik}`), 'traefik');
    assert.match(section, /nginx\.ingress\.kubernetes\.io\/auth-method: GET/);
  });
});

describe('the guards of mode authorizer', () => {
  test('the render fails with a clear message without server.trustedProxies', async () => {
    for (const mode of ['authorizer', 'both']) {
      const result = await template({ values: [{ mode }] });
      assert.notEqual(result.code, 0);
      assert.match(
        result.stderr,
        new RegExp(`mode: ${mode} needs config.server.trustedProxies: the addresses or CIDRs`),
      );
    }
    const empty = await template({
      ...authorizerScenario(),
      values: [{ config: { server: { trustedProxies: [] } } }],
    });
    assert.notEqual(empty.code, 0);
    assert.match(empty.stderr, /mode: authorizer needs config\.server\.trustedProxies/);
    // Given through the environment instead, the gateway has them: no failure.
    const fromEnv = await template({
      values: [
        {
          mode: 'both',
          extraEnv: [{ name: 'PORTARIA_SERVER__TRUSTED_PROXIES', value: '10.0.0.0/8' }],
        },
      ],
    });
    assert.equal(fromEnv.code, 0, fromEnv.stderr);
  });

  test('a decision port shared with another listener is refused', async () => {
    const shared = await template({
      values: [trusted, { mode: 'both', authorizer: { port: 8080 } }],
    });
    assert.notEqual(shared.code, 0);
    assert.match(shared.stderr, /authorizer\.port and ports\.http are both 8080/);
    const grpc = await template({
      values: [trusted, { mode: 'both', authorizer: { grpc: { port: 8181 } } }],
    });
    assert.notEqual(grpc.code, 0);
    assert.match(grpc.stderr, /authorizer\.grpc\.port and authorizer\.port are both 8181/);
    // A gRPC port that is off shares nothing.
    const off = await template({
      values: [trusted, { mode: 'both', authorizer: { grpc: { enabled: false, port: 8181 } } }],
    });
    assert.equal(off.code, 0, off.stderr);
  });

  test('config.mode and config.authorizer are refused (the chart sets them), and an unknown mode', async () => {
    for (const config of [{ mode: 'authorizer' }, { authorizer: { port: 8181 } }]) {
      const result = await template({ values: [{ config }] });
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /config: Additional property (mode|authorizer) is not allowed/);
    }
    const unknown = await template({ values: [{ mode: 'sidecar' }] });
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /mode/);
    const badHeader = await template({
      values: [trusted, { mode: 'both', authorizer: { originalUriHeader: 'X Original' } }],
    });
    assert.notEqual(badHeader.code, 0);
    assert.match(badHeader.stderr, /originalUriHeader/);
  });

  test("the values schema's mode and authorizer agree with the gateway's settings", async () => {
    const values = JSON.parse(await readFile(VALUES_SCHEMA, 'utf8')) as {
      properties: Record<string, SchemaNode>;
    };
    const gateway = configSchema.properties as unknown as Record<string, SchemaNode>;
    assert.deepEqual(values.properties.mode?.enum, gateway.mode?.enum);
    assert.equal(values.properties.mode?.default, gateway.mode?.default);
    const chart = values.properties.authorizer?.properties ?? {};
    const own = gateway.authorizer?.properties ?? {};
    // Every gateway setting but the listen address (the pod's) has its value.
    assert.deepEqual(
      Object.keys(own)
        .filter((k) => k !== 'host')
        .sort(),
      Object.keys(chart)
        .filter((k) => k !== 'service')
        .sort(),
    );
    const leaves = (node: SchemaNode, path: string): [string, SchemaNode][] =>
      node.properties === undefined
        ? [[path, node]]
        : Object.entries(node.properties).flatMap(([k, v]) => leaves(v, `${path}.${k}`));
    for (const key of Object.keys(own).filter((k) => k !== 'host')) {
      const theirs = new Map(leaves(own[key] as SchemaNode, key));
      for (const [path, mine] of leaves(chart[key] as SchemaNode, key)) {
        const setting = theirs.get(path);
        assert.ok(setting, `${path}: no such gateway setting`);
        assert.equal(mine.default, setting.default, `${path} default`);
        assert.equal(mine.type, setting.type, `${path} type`);
        assert.equal(mine.pattern, setting.pattern, `${path} pattern`);
        if (path.endsWith('port')) {
          // Container ports: unprivileged (the container drops every capability).
          assert.ok((mine.minimum ?? 0) >= (setting.minimum ?? 0), `${path} minimum`);
          assert.equal(mine.maximum, setting.maximum, `${path} maximum`);
        } else {
          assert.equal(mine.minimum, setting.minimum, `${path} minimum`);
          assert.equal(mine.maximum, setting.maximum, `${path} maximum`);
        }
      }
    }
  });
});

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  enum?: readonly string[];
  default?: unknown;
  type?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
}

describe('the chart in mode proxy', () => {
  test('renders no decision port, no authorizer Service and no mode', async () => {
    for (const options of [{}, { files: [scenarioFile('default')] }]) {
      const objects = await render(options);
      assert.deepEqual(
        containerPorts(objects).map((p) => p.name),
        ['http', 'admin'],
      );
      assert.deepEqual(
        findAll(objects, 'Service').map((s) => s.metadata.name),
        ['portaria-admin', 'portaria'],
      );
      const raw = parse(configText(objects)) as Record<string, unknown>;
      assert.equal(raw.mode, undefined);
      assert.equal(raw.authorizer, undefined);
      const pod = find(objects, 'Pod') as unknown as IPod;
      const env = pod.spec?.containers[0]?.env ?? [];
      assert.equal(env.find((e) => e.name === 'MODE')?.value, 'proxy');
      assert.equal(
        env.find((e) => e.name === 'DECISIONS_URL'),
        undefined,
      );
    }
    const policy = await render({ values: [{ networkPolicy: { enabled: true } }] });
    assert.doesNotMatch(JSON.stringify(find(policy, 'NetworkPolicy')), /decisions/);
  });
});

/**
 * The rendered gateway, in-process: the ConfigMap's portaria.yaml and the Secret's files,
 * with the pod paths and listen addresses mapped onto this machine.
 */
async function startRenderedGateway(
  t: TestContext,
  objects: readonly K8sObject[],
  trustedProxies: readonly string[],
): Promise<{ publicUrl: string; authorizerUrl: string }> {
  const dir = await tempDir(t, 'portaria-helm-authorizer-');
  const secretDir = join(dir, 'secret');
  await mkdir(secretDir, { mode: 0o700 });
  await mkdir(join(dir, 'data'));
  const secret = installed(objects).find((o) => o.kind === 'Secret') as unknown as {
    data: Record<string, string>;
  };
  for (const [name, value] of Object.entries(secret.data)) {
    await writeFile(join(secretDir, name), Buffer.from(value, 'base64'), { mode: 0o400 });
  }
  const raw = parse(configText(objects)) as Record<string, Record<string, unknown>>;
  const local = { host: '127.0.0.1', port: 0 };
  raw.server = { ...raw.server, ...local, trustedProxies };
  const tokenFile = raw.admin?.tokenFile ? join(secretDir, 'admin-token') : null;
  raw.admin = { ...raw.admin, ...local, tokenFile };
  raw.authorizer = { ...raw.authorizer, ...local, grpc: { enabled: true, port: 0 } };
  raw.keys = { ...raw.keys, dir: secretDir };
  raw.clients = { file: join(secretDir, 'clients.json') };
  raw.revocation = {
    ...raw.revocation,
    file: join(dir, 'data', 'revocations.log'),
    queueFile: join(dir, 'data', 'revocations-pending.log'),
  };
  // Routes with an upstream (mode both) forward to a loopback one.
  const routes = (raw.routes ?? []) as unknown as { upstream?: string }[];
  if (routes.some((r) => r.upstream !== undefined)) {
    const upstream = await startUpstream(t);
    for (const route of routes) if (route.upstream !== undefined) route.upstream = upstream.url;
  }
  const config = validateConfig(raw, { baseDir: dir });
  const app = await createApp({
    config,
    logDestination: new Writable({ write: (_chunk, _encoding, done) => done() }),
  });
  const urls = await app.listen();
  t.after(() => app.shutdown());
  return urls;
}

/** The test pod's script with the pod's environment, its URLs pointed at the gateway. */
async function runHook(objects: readonly K8sObject[], urls: Record<string, string>) {
  const pod = find(objects, 'Pod') as unknown as IPod;
  const container = pod.spec?.containers[0];
  const script = container?.command?.[2];
  assert.ok(script);
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  for (const variable of container?.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    if (ref) {
      const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === ref.name) as
        | { data: Record<string, string> }
        | undefined;
      assert.ok(secret, `the hook references Secret ${ref.name}`);
      env[variable.name] = Buffer.from(secret.data[ref.key] as string, 'base64').toString();
    } else env[variable.name] = variable.value ?? '';
  }
  assert.equal(env.DECISIONS_URL, 'http://portaria-authorizer.portaria.svc:8181');
  Object.assign(env, urls);
  return runToEnd('sh', ['-ec', script], { env });
}

describe('helm test hook in mode authorizer, run against the rendered gateway', () => {
  test('asks for decisions without and with a token (the pod a trusted proxy)', async (t) => {
    const objects = await render(authorizerScenario());
    const gw = await startRenderedGateway(t, objects, ['127.0.0.1']);
    const result = await runHook(objects, {
      PORTARIA_URL: gw.publicUrl,
      DECISIONS_URL: gw.authorizerUrl,
    });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.deepEqual(result.stdout.trim().split('\n'), [
      'ok: public keys served',
      'ok: decision on /v1/orders/1 refused without a token',
      'ok: token issued',
      'ok: decision on /v1/orders/1 with the token: allowed',
    ]);
  });

  test('from a pod that is no trusted proxy it checks the decision port answers', async (t) => {
    const objects = await render(authorizerScenario());
    const gw = await startRenderedGateway(t, objects, ['10.0.0.0/8']);
    const result = await runHook(objects, {
      PORTARIA_URL: gw.publicUrl,
      DECISIONS_URL: gw.authorizerUrl,
    });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.deepEqual(result.stdout.trim().split('\n'), [
      'ok: public keys served',
      'ok: decision port answers (this pod is not a trusted proxy: no decision with a token)',
      'ok: token issued',
    ]);
  });

  test('fails when the decision port does not answer', async (t) => {
    const objects = await render(authorizerScenario());
    const gw = await startRenderedGateway(t, objects, ['127.0.0.1']);
    const result = await runHook(objects, {
      PORTARIA_URL: gw.publicUrl,
      DECISIONS_URL: 'http://127.0.0.1:9',
    });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /FAIL: decision on \/v1\/orders\/1 without a token answered 000/);
  });

  test('in mode both it also calls through the gateway', async (t) => {
    const objects = await render({
      files: [scenarioFile('default')],
      values: [trusted, { mode: 'both' }],
    });
    const gw = await startRenderedGateway(t, objects, ['127.0.0.1']);
    const result = await runHook(objects, {
      PORTARIA_URL: gw.publicUrl,
      DECISIONS_URL: gw.authorizerUrl,
    });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.deepEqual(result.stdout.trim().split('\n'), [
      'ok: public keys served',
      'ok: /v1/orders/1 refused without a token',
      'ok: decision on /v1/orders/1 refused without a token',
      'ok: token issued',
      'ok: GET /v1/orders/1 with the token answered 200',
      'ok: decision on /v1/orders/1 with the token: allowed',
    ]);
  });
});
