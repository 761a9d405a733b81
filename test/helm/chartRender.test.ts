/**
 * `helm template` for every CI scenario (and the chart defaults): every object validated
 * offline (kubernetes-models and prometheus-operator models, plus the unknown-field
 * check), then assertions on what the chart promises — labels, the hardened security
 * context, probes on the admin port, ports, the drain timing, checksum annotations — and
 * the rendered gateway configuration accepted by the gateway's own loader and validator.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { IServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPod } from 'kubernetes-models/v1/Pod';
import type { IService } from 'kubernetes-models/v1/Service';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/loadConfig.js';
import type { Config } from '../../src/config/types.js';
import {
  find,
  findAll,
  installed,
  type K8sObject,
  NAMESPACE,
  RELEASE,
  type RenderOptions,
  render,
  renderNotes,
  SCENARIOS,
} from './helm.js';
import { KNOWN_KINDS, modelProblems, unknownFieldProblems } from './kubeValidate.js';
import { CHART_DIR, REPO_ROOT } from './paths.js';

/** The CI scenarios and the chart's defaults, rendered once each. */
const CASES: readonly { name: string; options: RenderOptions }[] = [
  { name: 'chart-defaults', options: {} },
  ...SCENARIOS.map((s) => ({ name: s.name, options: { files: [s.file] } })),
];
const cache = new Map<string, Promise<K8sObject[]>>();
function rendered(name: string): Promise<K8sObject[]> {
  const found = CASES.find((c) => c.name === name);
  if (found === undefined) throw new Error(`no scenario ${name}`);
  let objects = cache.get(name);
  if (objects === undefined) {
    objects = render(found.options);
    cache.set(name, objects);
  }
  return objects;
}

const chart = parse(await readFile(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as {
  version: string;
  appVersion: string;
};

function deploymentOf(objects: readonly K8sObject[]): IDeployment {
  return find(objects, 'Deployment') as unknown as IDeployment;
}
function gatewayContainer(objects: readonly K8sObject[]): IContainer {
  const containers = deploymentOf(objects).spec?.template.spec?.containers ?? [];
  const container = containers.find((c) => c.name === 'portaria');
  assert.ok(container, 'no container named portaria');
  return container;
}
function configText(objects: readonly K8sObject[]): string {
  const map = find(objects, 'ConfigMap', RELEASE) as unknown as { data: Record<string, string> };
  const text = map.data['portaria.yaml'];
  assert.ok(text, 'the ConfigMap has no portaria.yaml');
  return text;
}
function rawConfig(objects: readonly K8sObject[]): Record<string, Record<string, unknown>> {
  return parse(configText(objects)) as Record<string, Record<string, unknown>>;
}

/** The unknown-field check of every case, in one TypeScript program (~2 s). */
let unknownFieldsOfCases: Promise<Record<string, string[]>> | undefined;
function unknownFields(): Promise<Record<string, string[]>> {
  unknownFieldsOfCases ??= Promise.all(
    CASES.map(async (c) => [c.name, await rendered(c.name)] as const),
  ).then((entries) => unknownFieldProblems(Object.fromEntries(entries)));
  return unknownFieldsOfCases;
}

describe('every rendered object is valid Kubernetes', () => {
  for (const { name } of CASES) {
    test(`${name}: every kind is modelled and validates`, async () => {
      const objects = await rendered(name);
      assert.ok(objects.length >= 5, `only ${objects.length} objects`);
      for (const o of objects) {
        assert.ok(KNOWN_KINDS.includes(`${o.apiVersion}/${o.kind}`), `${o.apiVersion}/${o.kind}`);
      }
      assert.deepEqual(await modelProblems(objects), []);
    });
    test(`${name}: no field the Kubernetes API does not know`, async () => {
      assert.deepEqual((await unknownFields())[name], []);
    });
  }

  test('the checks catch a misspelt field and a wrong type', async () => {
    const deployment = structuredClone(deploymentOf(await rendered('default')));
    const container = deployment.spec?.template.spec?.containers[0] as unknown as Record<
      string,
      Record<string, unknown>
    >;
    (container.securityContext as Record<string, unknown>).runAsNonroot = true;
    const misspelt =
      unknownFieldProblems({ mutated: [deployment as unknown as K8sObject] }).mutated ?? [];
    assert.equal(misspelt.length, 1);
    assert.match(misspelt[0] as string, /Deployment\/portaria line \d+ .*"runAsNonroot"/);

    const wrongType = structuredClone(deploymentOf(await rendered('default')));
    (
      wrongType.spec?.template.spec?.containers[0]?.ports?.[0] as { containerPort: unknown }
    ).containerPort = 'http';
    const problems = await modelProblems([wrongType as unknown as K8sObject]);
    assert.equal(problems.length, 1);
    assert.match(problems[0] as string, /containerPort must be integer/);
  });
});

describe('labels', () => {
  for (const { name } of CASES) {
    test(`${name}: every object carries the standard labels`, async () => {
      for (const o of await rendered(name)) {
        const labels = o.metadata.labels ?? {};
        const at = `${o.kind}/${o.metadata.name}`;
        // The test pod is no gateway: its name label keeps it out of every selector.
        const name = o.kind === 'Pod' ? 'portaria-test' : 'portaria';
        assert.equal(labels['app.kubernetes.io/name'], name, at);
        assert.equal(labels['app.kubernetes.io/instance'], RELEASE, at);
        assert.equal(labels['app.kubernetes.io/version'], chart.appVersion, at);
        assert.equal(labels['app.kubernetes.io/managed-by'], 'Helm', at);
        assert.equal(labels['helm.sh/chart'], `portaria-${chart.version}`, at);
        assert.equal(
          o.metadata.namespace,
          o.kind === 'ConfigMap' && o.metadata.name.endsWith('-dashboard')
            ? 'monitoring'
            : NAMESPACE,
          at,
        );
      }
    });
  }

  test('selectors pick the gateway pods and nothing else', async () => {
    const objects = await rendered('monitoring');
    const selector = {
      'app.kubernetes.io/name': 'portaria',
      'app.kubernetes.io/instance': RELEASE,
    };
    const deployment = deploymentOf(objects);
    assert.deepEqual(deployment.spec?.selector.matchLabels, selector);
    const podLabels = deployment.spec?.template.metadata?.labels ?? {};
    for (const [k, v] of Object.entries(selector)) assert.equal(podLabels[k], v);
    const selectors = [
      deployment.spec?.selector.matchLabels,
      (find(objects, 'Service', RELEASE) as unknown as IService).spec?.selector,
      (find(objects, 'Service', '-admin') as unknown as IService).spec?.selector,
      (find(objects, 'PodDisruptionBudget') as unknown as IPodDisruptionBudget).spec?.selector
        ?.matchLabels,
      (find(objects, 'NetworkPolicy') as unknown as INetworkPolicy).spec?.podSelector?.matchLabels,
    ];
    for (const s of selectors) assert.deepEqual(s, selector);
    // The test pod is no gateway: no Service sends it traffic, the budget does not count it,
    // the policy does not govern it, the Deployment does not adopt it.
    const testPod = find(objects, 'Pod') as unknown as IPod;
    const testLabels = testPod.metadata?.labels ?? {};
    assert.equal(testLabels['app.kubernetes.io/component'], 'test');
    assert.equal(testLabels['app.kubernetes.io/name'], 'portaria-test');
    assert.equal(testLabels['app.kubernetes.io/instance'], RELEASE);
    for (const s of selectors) {
      const matches = Object.entries(s ?? {}).every(([k, v]) => testLabels[k] === v);
      assert.equal(matches, false, `a selector matches the test pod: ${JSON.stringify(s)}`);
    }
    // Even with the longest name the chart allows, "-test" is not truncated away.
    const long = 'n'.repeat(63);
    const renamed = await render({ values: [{ nameOverride: long }] });
    const renamedPod = find(renamed, 'Pod') as unknown as IPod;
    assert.notEqual(renamedPod.metadata?.labels?.['app.kubernetes.io/name'], long);
    assert.match(renamedPod.metadata?.labels?.['app.kubernetes.io/name'] ?? '', /-test$/);
  });

  test('the test hook pod is deleted before a rerun and after success', async () => {
    for (const { name } of CASES) {
      const pod = find(await rendered(name), 'Pod');
      assert.equal(pod.metadata.annotations?.['helm.sh/hook'], 'test', name);
      assert.equal(
        pod.metadata.annotations?.['helm.sh/hook-delete-policy'],
        'before-hook-creation,hook-succeeded',
        name,
      );
    }
  });
});

describe('Deployment', () => {
  for (const { name } of CASES) {
    test(`${name}: hardened security context`, async () => {
      const objects = await rendered(name);
      const pod = deploymentOf(objects).spec?.template.spec;
      assert.equal(pod?.securityContext?.runAsNonRoot, true);
      assert.ok((pod?.securityContext?.runAsUser ?? 0) > 0, 'runAsUser must not be root');
      assert.equal(pod?.securityContext?.seccompProfile?.type, 'RuntimeDefault');
      assert.equal(pod?.automountServiceAccountToken, false);
      assert.equal(pod?.hostNetwork, undefined);
      const sc = gatewayContainer(objects).securityContext;
      assert.equal(sc?.runAsNonRoot, true);
      assert.equal(sc?.allowPrivilegeEscalation, false);
      assert.equal(sc?.readOnlyRootFilesystem, true);
      assert.equal(sc?.privileged, undefined);
      assert.deepEqual(sc?.capabilities, { drop: ['ALL'] });
      assert.equal(sc?.seccompProfile?.type, 'RuntimeDefault');

      // The only writable mount is the data directory.
      const mounts = gatewayContainer(objects).volumeMounts ?? [];
      const writable = mounts.filter((m) => m.readOnly !== true).map((m) => m.mountPath);
      assert.deepEqual(writable, ['/data']);
      const data = pod?.volumes?.find((v) => v.name === 'data');
      assert.ok(data?.emptyDir ?? data?.persistentVolumeClaim, 'the data volume');

      // The test hook pod is hardened too.
      for (const testPod of findAll(objects, 'Pod') as unknown as IPod[]) {
        assert.equal(testPod.spec?.securityContext?.runAsNonRoot, true);
        const c = testPod.spec?.containers[0]?.securityContext;
        assert.equal(c?.readOnlyRootFilesystem, true);
        assert.equal(c?.allowPrivilegeEscalation, false);
        assert.deepEqual(c?.capabilities, { drop: ['ALL'] });
      }
    });

    test(`${name}: probes on /healthz and /readyz of the admin port; ports match the config`, async () => {
      const objects = await rendered(name);
      const container = gatewayContainer(objects);
      assert.equal(container.livenessProbe?.httpGet?.path, '/healthz');
      assert.equal(container.livenessProbe?.httpGet?.port, 'admin');
      assert.equal(container.readinessProbe?.httpGet?.path, '/readyz');
      assert.equal(container.readinessProbe?.httpGet?.port, 'admin');
      assert.equal(container.startupProbe?.httpGet?.path, '/healthz');
      assert.equal(container.startupProbe?.httpGet?.port, 'admin');
      const ports = Object.fromEntries(
        (container.ports ?? []).map((p) => [p.name, p.containerPort]),
      );
      const config = rawConfig(objects);
      // With mode authorizer or both, the decision listeners too (chartAuthorizer.test.ts).
      const decisions = config.authorizer as
        | { port: number; grpc: { enabled: boolean; port: number } }
        | undefined;
      assert.deepEqual(ports, {
        http: config.server?.port,
        admin: config.admin?.port,
        ...(decisions === undefined ? {} : { decisions: decisions.port }),
        ...(decisions?.grpc.enabled ? { 'grpc-decisions': decisions.grpc.port } : {}),
      });
      assert.equal(config.server?.host, '0.0.0.0');
      assert.equal(config.admin?.host, '0.0.0.0', 'probes and Prometheus reach the admin port');
      assert.deepEqual(container.args, ['--config', '/etc/portaria/config/portaria.yaml']);

      // The main Service publishes the public listener only; the admin listener has its
      // own Service, always ClusterIP.
      const service = find(objects, 'Service', RELEASE) as unknown as IService;
      assert.deepEqual(
        service.spec?.ports?.map((p) => [p.name, p.targetPort]),
        [['http', 'http']],
      );
      const admin = find(objects, 'Service', '-admin') as unknown as IService;
      assert.equal(admin.metadata?.name, `${RELEASE}-admin`);
      assert.equal(admin.spec?.type, 'ClusterIP');
      assert.equal(admin.metadata?.labels?.['app.kubernetes.io/component'], 'admin');
      assert.equal(service.metadata?.labels?.['app.kubernetes.io/component'], undefined);
      assert.deepEqual(
        admin.spec?.ports?.map((p) => [p.name, p.port, p.targetPort]),
        [['admin', 9091, 'admin']],
      );
    });

    test(`${name}: the grace period covers preStop, the gateway's drain and 5 s of cleanup`, async () => {
      const objects = await rendered(name);
      const pod = deploymentOf(objects).spec?.template.spec;
      const preStop = gatewayContainer(objects).lifecycle?.preStop?.sleep?.seconds;
      assert.ok(typeof preStop === 'number' && preStop > 0, 'preStop sleeps');
      const graceMs = Number(rawConfig(objects).server?.shutdownGraceMs ?? 30_000);
      const grace = pod?.terminationGracePeriodSeconds ?? 30;
      assert.ok(
        grace >= preStop + Math.ceil(graceMs / 1000) + 5,
        `terminationGracePeriodSeconds ${grace} < preStop ${preStop} + drain ${graceMs} ms + 5 s`,
      );
    });
  }

  test('the derived grace period is preStop + ceil(drain) + 5 s', async () => {
    assert.equal(
      deploymentOf(await rendered('default')).spec?.template.spec?.terminationGracePeriodSeconds,
      5 + 30 + 5,
    );
    assert.equal(
      deploymentOf(await rendered('redis-ha')).spec?.template.spec?.terminationGracePeriodSeconds,
      10 + 20 + 5,
    );
    const odd = await render({ values: [{ config: { server: { shutdownGraceMs: 2_500 } } }] });
    assert.equal(deploymentOf(odd).spec?.template.spec?.terminationGracePeriodSeconds, 5 + 3 + 5);
    assert.equal(
      deploymentOf(await rendered('existing-secret')).spec?.template.spec
        ?.terminationGracePeriodSeconds,
      60,
    );
  });

  test('drain.preStopSleepSeconds: 0 renders no preStop hook (a 0 s sleep is refused before 1.33)', async () => {
    const objects = await render({ values: [{ drain: { preStopSleepSeconds: 0 } }] });
    const container = gatewayContainer(objects);
    assert.equal(container.lifecycle, undefined);
    assert.doesNotMatch(JSON.stringify(deploymentOf(objects)), /preStop/);
    // Derived: 0 + ceil(30 000 ms) + 5 s.
    assert.equal(deploymentOf(objects).spec?.template.spec?.terminationGracePeriodSeconds, 35);
    assert.deepEqual(await modelProblems(objects), []);
    assert.deepEqual(unknownFieldProblems({ noPreStop: objects }).noPreStop, []);
    const one = await render({ values: [{ drain: { preStopSleepSeconds: 1 } }] });
    assert.equal(gatewayContainer(one).lifecycle?.preStop?.sleep?.seconds, 1);
  });

  test('persistence.existingClaim: Recreate, so two pods never mount the claim at once', async () => {
    const claim = deploymentOf(await rendered('existing-secret')).spec;
    assert.equal(
      claim?.template.spec?.volumes?.find((v) => v.name === 'data')?.persistentVolumeClaim
        ?.claimName,
      'portaria-data',
    );
    assert.deepEqual(claim?.strategy, { type: 'Recreate' });
    const tuned = await render({
      values: [{ persistence: { existingClaim: 'data' }, updateStrategy: { maxSurge: 2 } }],
    });
    assert.deepEqual(deploymentOf(tuned).spec?.strategy, { type: 'Recreate' });
    for (const name of ['chart-defaults', 'default', 'redis-ha', 'monitoring']) {
      assert.deepEqual(
        deploymentOf(await rendered(name)).spec?.strategy,
        { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
        name,
      );
    }
  });

  test('checksum annotations change with the config or the Secret, and only then', async () => {
    const base = [{ files: [SCENARIOS.find((s) => s.name === 'default')?.file as string] }];
    const sums = async (values: Record<string, unknown>[]) => {
      const annotations =
        deploymentOf(await render({ ...base[0], values })).spec?.template.metadata?.annotations ??
        {};
      const config = annotations['checksum/config'];
      const secret = annotations['checksum/secret'];
      assert.match(config ?? '', /^[0-9a-f]{64}$/);
      assert.match(secret ?? '', /^[0-9a-f]{64}$/);
      return { config, secret };
    };
    const first = await sums([]);
    assert.deepEqual(await sums([]), first, 'rendering is deterministic');
    const logLevel = await sums([{ config: { log: { level: 'debug' } } }]);
    assert.notEqual(logLevel.config, first.config);
    assert.equal(logLevel.secret, first.secret);
    const clients = await sums([{ secrets: { clientsJson: '{"clients": []}' } }]);
    assert.equal(clients.config, first.config);
    assert.notEqual(clients.secret, first.secret);
    const port = await sums([{ ports: { http: 8081 } }]);
    assert.notEqual(port.config, first.config);
  });

  test('several replicas: no fixed replica count under the autoscaler', async () => {
    const objects = await rendered('redis-ha');
    assert.equal(deploymentOf(objects).spec?.replicas, undefined);
    const hpa = find(objects, 'HorizontalPodAutoscaler') as unknown as IHorizontalPodAutoscaler;
    assert.deepEqual(hpa.spec?.scaleTargetRef, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: deploymentOf(objects).metadata?.name,
    });
    assert.equal(hpa.spec?.minReplicas, 3);
    assert.equal(hpa.spec?.maxReplicas, 6);
    assert.deepEqual(
      hpa.spec?.metrics?.map((m) => [m.resource?.name, m.resource?.target.averageUtilization]),
      [
        ['cpu', 60],
        ['memory', 80],
      ],
    );
    const pdb = find(objects, 'PodDisruptionBudget') as unknown as IPodDisruptionBudget;
    assert.equal(pdb.spec?.minAvailable, 2);
    assert.equal(deploymentOf(await rendered('default')).spec?.replicas, 1);
    assert.equal(findAll(await rendered('default'), 'HorizontalPodAutoscaler').length, 0);
  });

  test('Redis wiring: URL in the config, from a Secret as PORTARIA_REDIS_URL, password as a file', async () => {
    const ha = await rendered('redis-ha');
    assert.equal(rawConfig(ha).redis?.url, 'redis://redis-master.redis.svc:6379/0');
    assert.equal(rawConfig(ha).redis?.passwordFile, '/etc/portaria/redis/password');
    const volume = deploymentOf(ha).spec?.template.spec?.volumes?.find(
      (v) => v.name === 'redis-password',
    );
    assert.deepEqual(volume?.secret?.items, [{ key: 'redis-password', path: 'password' }]);
    assert.equal(gatewayContainer(ha).env, undefined);

    const monitoring = await rendered('monitoring');
    assert.equal(rawConfig(monitoring).redis, undefined, 'no URL in the ConfigMap');
    assert.deepEqual(gatewayContainer(monitoring).env, [
      {
        name: 'PORTARIA_REDIS_URL',
        valueFrom: { secretKeyRef: { name: 'portaria-redis', key: 'url' } },
      },
    ]);
  });

  test('Redis Sentinel wiring: sentinels, primary name, ACL user, TLS files and both passwords as files', async () => {
    const objects = await rendered('redis-sentinel');
    const redis = rawConfig(objects).redis;
    assert.equal(redis?.url, undefined);
    assert.equal(redis?.username, 'portaria');
    assert.equal(redis?.passwordFile, '/etc/portaria/redis/password');
    assert.deepEqual(redis?.sentinel, {
      masterName: 'mymaster',
      nodes: [0, 1, 2].map((i) => `redis-node-${i}.redis-headless.redis.svc:26379`),
      passwordFile: '/etc/portaria/redis-sentinel/password',
    });
    assert.deepEqual(redis?.tls, {
      enabled: true,
      serverName: 'redis.redis.svc',
      caFile: '/etc/portaria/redis-tls/ca.crt',
      certFile: '/etc/portaria/redis-tls/tls.crt',
      keyFile: '/etc/portaria/redis-tls/tls.key',
    });
    const volumes = deploymentOf(objects).spec?.template.spec?.volumes ?? [];
    const tlsSecret = volumes.find((v) => v.name === 'redis-tls')?.secret;
    assert.equal(tlsSecret?.secretName, 'redis-client-tls');
    assert.deepEqual(tlsSecret?.items, [
      { key: 'ca.crt', path: 'ca.crt' },
      { key: 'tls.crt', path: 'tls.crt' },
      { key: 'tls.key', path: 'tls.key' },
    ]);
    assert.deepEqual(volumes.find((v) => v.name === 'redis-sentinel-password')?.secret?.items, [
      { key: 'sentinel-password', path: 'password' },
    ]);
  });

  test('Redis Cluster wiring: seed nodes and a private CA, nothing of Sentinel', async () => {
    const objects = await rendered('redis-cluster');
    const redis = rawConfig(objects).redis;
    assert.deepEqual(redis?.cluster, {
      nodes: [0, 1, 2].map((i) => `redis-cluster-${i}.redis-cluster-headless.redis.svc:6379`),
    });
    assert.equal(redis?.sentinel, undefined);
    assert.deepEqual(redis?.tls, { enabled: true, caFile: '/etc/portaria/redis-tls/ca.crt' });
    const volumes = deploymentOf(objects).spec?.template.spec?.volumes ?? [];
    assert.deepEqual(volumes.find((v) => v.name === 'redis-tls')?.secret?.items, [
      { key: 'ca.crt', path: 'ca.crt' },
    ]);
    assert.equal(
      volumes.find((v) => v.name === 'redis-sentinel-password'),
      undefined,
    );
  });

  test('TLS wiring: the certificate Secret, the client CAs and CRLs as whole-directory mounts, the settings passed on, nothing rolling the pods', async () => {
    const objects = await rendered('tls');
    const config = rawConfig(objects);
    assert.deepEqual(config.server?.tls, {
      enabled: true,
      certFile: '/etc/portaria/tls/tls.crt',
      keyFile: '/etc/portaria/tls/tls.key',
      minVersion: 'TLSv1.2',
      policy: 'fapi',
      clientCertificates: 'require',
    });
    assert.deepEqual(config.clientCertificate, {
      source: 'tls',
      caFiles: ['/etc/portaria/client-ca/ca.crt'],
      crlFiles: ['/etc/portaria/client-crl/crl.pem'],
    });
    const spec = deploymentOf(objects).spec?.template.spec;
    const volumes = spec?.volumes ?? [];
    const tlsSecret = volumes.find((v) => v.name === 'tls')?.secret;
    assert.deepEqual(
      { ...tlsSecret, defaultMode: undefined },
      {
        secretName: 'portaria-tls',
        defaultMode: undefined,
        items: [
          { key: 'tls.crt', path: 'tls.crt' },
          { key: 'tls.key', path: 'tls.key' },
        ],
      },
    );
    const caMap = volumes.find((v) => v.name === 'client-ca')?.configMap;
    assert.deepEqual(
      { ...caMap, defaultMode: undefined },
      {
        name: 'partner-cas',
        defaultMode: undefined,
        items: [{ key: 'partners-ca.pem', path: 'ca.crt' }],
      },
    );
    assert.equal(volumes.find((v) => v.name === 'client-crl')?.secret?.secretName, 'partner-crls');
    // subPath mounts are never updated by the kubelet: the reload would never see a renewal.
    for (const mount of gatewayContainer(objects).volumeMounts ?? []) {
      assert.equal(mount.subPath, undefined, mount.name);
    }
    // The Secrets are not the chart's: no checksum of them rolls the pods.
    const annotations = deploymentOf(objects).spec?.template.metadata?.annotations ?? {};
    assert.deepEqual(Object.keys(annotations).sort(), ['checksum/config', 'checksum/secret']);
    const service = find(objects, 'Service', RELEASE) as unknown as IService;
    assert.deepEqual(service.spec?.ports, [
      { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP', appProtocol: 'https' },
    ]);
    const noTls = find(await rendered('default'), 'Service', RELEASE) as unknown as IService;
    assert.equal(noTls.spec?.ports?.[0]?.appProtocol, undefined);
    // The test pod calls https:// with the server's CA and the partner certificate.
    const pod = find(objects, 'Pod') as unknown as IPod;
    const env = new Map((pod.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    assert.equal(env.get('PORTARIA_URL'), 'https://portaria.portaria.svc:80');
    assert.equal(
      env.get('CURL_TLS'),
      '--cacert /etc/portaria-test/tls/ca.crt --cert /etc/portaria-test/client/tls.crt --key /etc/portaria-test/client/tls.key',
    );
    assert.deepEqual(
      pod.spec?.volumes?.map((v) => [
        v.name,
        v.secret?.secretName,
        v.secret?.items?.map((i) => i.key),
      ]),
      [
        ['server-ca', 'portaria-tls', ['ca.crt']],
        ['client-certificate', 'portaria-test-partner', ['tls.crt', 'tls.key']],
      ],
    );
    assert.equal(
      (find(await rendered('default'), 'Pod') as unknown as IPod).spec?.volumes,
      undefined,
    );
  });

  test('existingSecret: no Secret rendered, the pods mount the named one', async () => {
    const objects = await rendered('existing-secret');
    assert.equal(installed(objects).filter((o) => o.kind === 'Secret').length, 0);
    const volume = deploymentOf(objects).spec?.template.spec?.volumes?.find(
      (v) => v.name === 'secret',
    );
    assert.equal(volume?.secret?.secretName, 'portaria-material');
    assert.equal(deploymentOf(objects).spec?.template.spec?.serviceAccountName, 'portaria-runtime');
    assert.equal(findAll(objects, 'ServiceAccount').length, 0);
    assert.equal(
      gatewayContainer(objects).image,
      `registry.example.com/platform/portaria@sha256:${'0123456789abcdef'.repeat(4)}`,
    );
  });

  test('inline secrets: the chart-made Secret holds the key files, clients.json and admin-token', async () => {
    const secret = installed(await rendered('default')).find(
      (o) => o.kind === 'Secret',
    ) as unknown as {
      data: Record<string, string>;
    };
    assert.deepEqual(Object.keys(secret.data).sort(), [
      'admin-token',
      'ci-test-key.pem',
      'clients.json',
    ]);
    const clients = JSON.parse(
      Buffer.from(secret.data['clients.json'] as string, 'base64').toString('utf8'),
    );
    assert.equal(clients.clients[0].id, 'helm-test');
  });
});

describe('network and monitoring objects', () => {
  test('NetworkPolicy: the admin port only from the monitoring namespace, the public port as configured', async () => {
    const policy = find(await rendered('monitoring'), 'NetworkPolicy') as unknown as INetworkPolicy;
    assert.deepEqual(policy.spec?.policyTypes, ['Ingress']);
    const rules = policy.spec?.ingress ?? [];
    assert.equal(rules.length, 2);
    const admin = rules.find((r) => r.ports?.some((p) => p.port === 'admin'));
    assert.deepEqual(admin?.from, [
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
      },
    ]);
    const pub = rules.find((r) => r.ports?.some((p) => p.port === 'http'));
    assert.deepEqual(pub?.from, [
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } },
      // The helm test pod, by its own labels (it calls the public port from the release
      // namespace).
      {
        podSelector: {
          matchLabels: {
            'app.kubernetes.io/name': 'portaria-test',
            'app.kubernetes.io/instance': RELEASE,
          },
        },
      },
    ]);
    const testPodLabels = find(await rendered('monitoring'), 'Pod').metadata.labels ?? {};
    for (const [k, v] of Object.entries(pub?.from?.[1]?.podSelector?.matchLabels ?? {}))
      assert.equal(testPodLabels[k], v, 'the peer selects the test pod');
    const noTests = await render({
      files: [SCENARIOS.find((sc) => sc.name === 'monitoring')?.file as string],
      values: [{ tests: { enabled: false } }],
    });
    assert.equal(
      (find(noTests, 'NetworkPolicy') as unknown as INetworkPolicy).spec?.ingress?.find((r) =>
        r.ports?.some((p) => p.port === 'http'),
      )?.from?.length,
      1,
      'no test pod peer without the test pod',
    );
    // Every rule names its port: nothing else is reachable.
    for (const rule of rules) assert.equal(rule.ports?.length, 1);
    const defaults = await render({ values: [{ networkPolicy: { enabled: true } }] });
    const open = (find(defaults, 'NetworkPolicy') as unknown as INetworkPolicy).spec?.ingress ?? [];
    assert.equal(open.find((r) => r.ports?.some((p) => p.port === 'http'))?.from, undefined);
    assert.deepEqual(open.find((r) => r.ports?.some((p) => p.port === 'admin'))?.from, [
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
    ]);
  });

  test('ServiceMonitor scrapes /metrics on the admin Service only, as job <full name>', async () => {
    const objects = await rendered('monitoring');
    const monitor = find(objects, 'ServiceMonitor') as unknown as IServiceMonitor;
    assert.equal(monitor.metadata?.labels?.release, 'kube-prometheus-stack');
    assert.deepEqual(
      monitor.spec.endpoints?.map((e) => [e.port, e.path, e.interval]),
      [['admin', '/metrics', '15s']],
    );
    const selects = (service: IService) =>
      Object.entries(monitor.spec.selector.matchLabels ?? {}).every(
        ([k, v]) => service.metadata?.labels?.[k] === v,
      );
    const admin = find(objects, 'Service', '-admin') as unknown as IService;
    const main = find(objects, 'Service', RELEASE) as unknown as IService;
    assert.equal(monitor.spec.selector.matchLabels?.['app.kubernetes.io/component'], 'admin');
    assert.equal(selects(admin), true, 'the admin Service is selected');
    assert.equal(selects(main), false, 'the public Service is not selected');
    assert.ok(admin.spec?.ports?.some((p) => p.name === 'admin'));
    assert.deepEqual(monitor.spec.namespaceSelector?.matchNames, [NAMESPACE]);
    // The job label stays the full name (what prometheusRule.seriesSelector and the
    // dashboard select), not the admin Service's name.
    assert.deepEqual(monitor.spec.endpoints?.[0]?.relabelings, [
      { action: 'replace', targetLabel: 'job', replacement: RELEASE },
    ]);
  });

  test('the admin Service stays ClusterIP whatever service.type is', async () => {
    for (const type of ['LoadBalancer', 'NodePort']) {
      const objects = await render({
        values: [{ service: { type, annotations: { 'example.com/lb': 'external' } } }],
      });
      const main = find(objects, 'Service', RELEASE) as unknown as IService;
      const admin = find(objects, 'Service', '-admin') as unknown as IService;
      assert.equal(main.spec?.type, type);
      assert.deepEqual(
        main.spec?.ports?.map((p) => p.name),
        ['http'],
        `${type}: the public Service publishes no admin port`,
      );
      assert.equal(admin.spec?.type, 'ClusterIP', type);
      assert.equal(admin.metadata?.annotations, undefined, 'no load-balancer annotations');
    }
  });

  test('off by default: no NetworkPolicy, ServiceMonitor, PrometheusRule or dashboard', async () => {
    const kinds = (await rendered('chart-defaults'))
      .map((o) => `${o.kind}/${o.metadata.name}`)
      .sort();
    assert.deepEqual(kinds, [
      'ConfigMap/portaria',
      'Deployment/portaria',
      'Pod/portaria-test',
      'PodDisruptionBudget/portaria',
      'Secret/portaria',
      'Service/portaria',
      'Service/portaria-admin',
      'ServiceAccount/portaria',
    ]);
  });
});

describe('NOTES.txt', () => {
  const local = /WARNING: config\.revocation\.store is local and \/data is an emptyDir/;
  const queue = /WARNING: config\.revocation\.whileRedisDown is queue and \/data is an emptyDir/;
  const file = (name: string) => SCENARIOS.find((sc) => sc.name === name)?.file as string;

  test('the admin listener: its own ClusterIP Service, reached by port-forward', async () => {
    const notes = await renderNotes({ files: [file('default')] });
    assert.match(notes, /Admin listener .*: Service portaria-admin \(ClusterIP\), port 9091/);
    assert.match(
      notes,
      /kubectl -n portaria port-forward svc\/portaria-admin 9091:9091\n {2}curl -s http:\/\/127\.0\.0\.1:9091\/readyz/,
    );
    assert.match(notes, /port-forward svc\/portaria 8080:80\n/);
    assert.match(notes, /\/admin\/v1\/revocations/);
  });

  test('warns that the local store on an emptyDir loses revocations with the pod', async () => {
    for (const options of [{}, { files: [file('default')] }]) {
      const notes = await renderNotes(options);
      assert.match(notes, local);
      assert.match(notes, /persistence\.existingClaim \(one replica/);
      assert.match(notes, /config\.revocation\.store: redis/);
      assert.doesNotMatch(notes, queue);
    }
    // A claim keeps the log: no warning.
    assert.doesNotMatch(await renderNotes({ files: [file('existing-secret')] }), local);
  });

  test('warns that the Redis store queues revocations on an emptyDir while Redis is down', async () => {
    for (const name of ['redis-ha', 'monitoring']) {
      const notes = await renderNotes({ files: [file(name)] });
      assert.match(notes, queue, name);
      assert.match(notes, /whileRedisDown: refuse/, name);
      assert.doesNotMatch(notes, local, name);
    }
    const refuse = await renderNotes({
      files: [file('redis-ha')],
      values: [{ config: { revocation: { whileRedisDown: 'refuse' } } }],
    });
    assert.doesNotMatch(refuse, queue);
    const claim = await renderNotes({
      values: [
        {
          redis: { url: 'redis://redis:6379' },
          config: { revocation: { store: 'redis' } },
          persistence: { existingClaim: 'data' },
        },
      ],
    });
    assert.doesNotMatch(claim, queue);
    assert.doesNotMatch(claim, local);
  });
});

/** Placeholders for values the pod reads from Secrets (the render cannot know them). */
const SECRET_ENV_PLACEHOLDERS: Readonly<Record<string, string>> = {
  PORTARIA_REDIS_URL: 'redis://redis.from-secret.example:6379/0',
};

describe("the rendered configuration passes the gateway's own loader and validator", () => {
  for (const { name } of CASES) {
    test(`${name}: loadConfig accepts portaria.yaml with the container's environment`, async (t) => {
      const objects = await rendered(name);
      const container = gatewayContainer(objects);
      const env: Record<string, string> = {};
      for (const variable of container.env ?? []) {
        if (variable.value !== undefined) env[variable.name] = variable.value;
        else if (variable.valueFrom?.secretKeyRef) {
          const placeholder = SECRET_ENV_PLACEHOLDERS[variable.name];
          assert.ok(placeholder, `no placeholder for ${variable.name}`);
          env[variable.name] = placeholder;
        } else assert.fail(`unexpected env ${variable.name}`);
      }
      const dir = await mkdtemp(join(tmpdir(), 'portaria-chart-config-'));
      t.after(() => rm(dir, { recursive: true, force: true }));
      const file = join(dir, 'portaria.yaml');
      await writeFile(file, configText(objects));
      let config: Config;
      try {
        config = await loadConfig({ file, env, cwd: dir });
      } catch (error) {
        const problems = (error as { problems?: string[] }).problems;
        assert.fail(
          `the gateway refuses the rendered config:\n${(problems ?? [String(error)]).join('\n')}`,
        );
      }

      // Every file the gateway reads or writes is on a volume the pod mounts.
      const mounts = new Map(
        (container.volumeMounts ?? []).map((m) => [m.mountPath, m.readOnly === true]),
      );
      const mountOf = (path: string) => {
        const hit = [...mounts.keys()].find((m) => path === m || path.startsWith(`${m}/`));
        assert.ok(hit, `${path} is on no volume mount`);
        return { path: hit, readOnly: mounts.get(hit) };
      };
      assert.deepEqual(mountOf(config.keys.dir), { path: '/etc/portaria/secret', readOnly: true });
      assert.equal(config.keys.dir, '/etc/portaria/secret');
      assert.equal(mountOf(config.clients.file).path, '/etc/portaria/secret');
      assert.equal(
        mountOf(config.revocation.file).readOnly,
        false,
        'the revocation log is writable',
      );
      assert.equal(mountOf(config.revocation.queueFile).readOnly, false);
      if (config.admin.tokenFile !== null)
        assert.equal(mountOf(config.admin.tokenFile).path, '/etc/portaria/secret');
      const redisFiles = [
        config.redis.passwordFile,
        config.redis.sentinel.passwordFile,
        config.redis.tls.caFile,
        config.redis.tls.certFile,
        config.redis.tls.keyFile,
      ];
      for (const redisFile of redisFiles) {
        if (redisFile !== null) assert.equal(mountOf(redisFile).readOnly, true);
      }
      const tlsFiles = [
        config.server.tls.certFile,
        config.server.tls.keyFile,
        ...config.clientCertificate.caFiles,
        ...config.clientCertificate.crlFiles,
      ];
      for (const tlsFile of tlsFiles) {
        if (tlsFile !== null) assert.equal(mountOf(tlsFile).readOnly, true, tlsFile);
      }
      assert.equal(mountOf('/etc/portaria/config/portaria.yaml').readOnly, true);
      if (config.revocation.store === 'redis') {
        const { url, sentinel, cluster } = config.redis;
        assert.ok(url || sentinel.nodes.length > 0 || cluster.nodes.length > 0, 'a Redis');
      }
    });
  }

  test("the deploying page's values example renders, validates and loads", async (t) => {
    const readme = await readFile(join(REPO_ROOT, 'docs', 'deploying.md'), 'utf8');
    const example = /`values\.prod\.yaml`[^\n]*\n+```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(example, 'docs/deploying.md has the values.prod.yaml example');
    const objects = await render({ values: [parse(example) as Record<string, unknown>] });
    assert.deepEqual(await modelProblems(objects), []);
    assert.deepEqual(unknownFieldProblems({ readme: objects }).readme, []);
    const dir = await mkdtemp(join(tmpdir(), 'portaria-chart-config-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await writeFile(join(dir, 'portaria.yaml'), configText(objects));
    const config = await loadConfig({
      file: join(dir, 'portaria.yaml'),
      env: { PORTARIA_REDIS_URL: SECRET_ENV_PLACEHOLDERS.PORTARIA_REDIS_URL },
      cwd: dir,
    });
    assert.equal(config.revocation.store, 'redis');
    assert.equal(find(objects, 'HorizontalPodAutoscaler').kind, 'HorizontalPodAutoscaler');
  });

  test('the values example config settings reach the gateway unchanged', async () => {
    const config = rawConfig(await rendered('existing-secret'));
    assert.deepEqual(config.token, {
      algorithm: 'EdDSA',
      lifetimeSeconds: 900,
      responseFields: 'guide',
    });
    assert.deepEqual(config.keys, { dir: '/etc/portaria/secret', jwksMaxAgeSeconds: 600 });
    assert.equal(config.admin?.tokenFile, '/etc/portaria/secret/admin-token');
    assert.equal(rawConfig(await rendered('chart-defaults')).admin?.tokenFile, null);
  });
});
