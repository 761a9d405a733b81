/**
 * Offline validation of rendered Kubernetes objects, two ways:
 *
 * 1. `validate()` of the kubernetes-models and @kubernetes-models/prometheus-operator
 *    classes: types, required fields, enums and formats, from the Kubernetes OpenAPI
 *    definitions and the operator's CRD schemas.
 * 2. An unknown-field check. Those validators accept properties they do not know (the
 *    OpenAPI definitions do not close their objects), while the API server drops unknown
 *    fields or — with `kubectl --validate=strict`, the default since 1.27 — refuses them.
 *    The same packages ship TypeScript interfaces generated from the same definitions, so
 *    every object is type-checked as an object literal against its interface: TypeScript
 *    refuses any property an interface does not declare, at every depth ("excess property
 *    check"). This needs no further dependency (no 60 MB client library for its model
 *    classes) and reports the offending line.
 */
import { join } from 'node:path';
import ts from 'typescript';
import type { K8sObject } from './helm.js';
import { REPO_ROOT } from './paths.js';

interface KindEntry {
  /** Module path (for the runtime class and the TypeScript interface). */
  readonly module: string;
  /** Exported class name; the interface is `I<class>`. */
  readonly name: string;
}

const KINDS: Readonly<Record<string, KindEntry>> = {
  'v1/ConfigMap': { module: 'kubernetes-models/v1/ConfigMap', name: 'ConfigMap' },
  'v1/Secret': { module: 'kubernetes-models/v1/Secret', name: 'Secret' },
  'v1/Service': { module: 'kubernetes-models/v1/Service', name: 'Service' },
  'v1/ServiceAccount': { module: 'kubernetes-models/v1/ServiceAccount', name: 'ServiceAccount' },
  'v1/Pod': { module: 'kubernetes-models/v1/Pod', name: 'Pod' },
  'apps/v1/Deployment': { module: 'kubernetes-models/apps/v1/Deployment', name: 'Deployment' },
  'autoscaling/v2/HorizontalPodAutoscaler': {
    module: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
    name: 'HorizontalPodAutoscaler',
  },
  'policy/v1/PodDisruptionBudget': {
    module: 'kubernetes-models/policy/v1/PodDisruptionBudget',
    name: 'PodDisruptionBudget',
  },
  'networking.k8s.io/v1/NetworkPolicy': {
    module: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy',
    name: 'NetworkPolicy',
  },
  'monitoring.coreos.com/v1/ServiceMonitor': {
    module: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor',
    name: 'ServiceMonitor',
  },
  'monitoring.coreos.com/v1/PrometheusRule': {
    module: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule',
    name: 'PrometheusRule',
  },
};

export const KNOWN_KINDS: readonly string[] = Object.keys(KINDS);

function entryOf(object: K8sObject): KindEntry {
  const key = `${object.apiVersion}/${object.kind}`;
  const entry = KINDS[key];
  if (entry === undefined) throw new Error(`no model for ${key}: add it to kubeValidate.ts`);
  return entry;
}

function label(object: K8sObject): string {
  return `${object.kind}/${object.metadata.name}`;
}

/** Problems found by the models' `validate()` (empty when every object is valid). */
export async function modelProblems(objects: readonly K8sObject[]): Promise<string[]> {
  const problems: string[] = [];
  for (const object of objects) {
    const entry = entryOf(object);
    const module = (await import(entry.module)) as Record<
      string,
      new (
        data: unknown,
      ) => { validate(): void }
    >;
    const Model = module[entry.name];
    if (Model === undefined) throw new Error(`${entry.module} exports no ${entry.name}`);
    try {
      new Model(object).validate();
    } catch (error) {
      problems.push(`${label(object)}: ${(error as Error).message}`);
    }
  }
  return problems;
}

interface VirtualFile {
  readonly fileName: string;
  readonly text: string;
  /** Lines before the first object (the imports). */
  readonly offset: number;
  readonly starts: readonly { line: number; label: string }[];
}

function virtualFile(fileName: string, objects: readonly K8sObject[]): VirtualFile {
  const lines: string[] = [];
  const starts: { line: number; label: string }[] = [];
  const imports = new Map<string, string>();
  objects.forEach((object, i) => {
    const entry = entryOf(object);
    imports.set(entry.module, `I${entry.name}`);
    starts.push({ line: lines.length + 1, label: label(object) });
    const literal = JSON.stringify(object, null, 2).split('\n');
    lines.push(`export const object${i}: I${entry.name} = ${literal[0]}`, ...literal.slice(1));
    lines[lines.length - 1] += ';';
  });
  const header = [...imports].map(([module, name]) => `import type { ${name} } from '${module}';`);
  return { fileName, text: [...header, ...lines].join('\n'), offset: header.length, starts };
}

/**
 * Properties no interface declares, per group of objects (e.g. per scenario), one problem
 * per object that has any (TypeScript stops at the first excess property of an object
 * literal): `Deployment/x line 40 ("foo": 1): Object literal may only specify known
 * properties…`. All groups are checked in one TypeScript program.
 */
export function unknownFieldProblems(
  groups: Readonly<Record<string, readonly K8sObject[]>>,
): Record<string, string[]> {
  // Virtual modules inside the repository, so `kubernetes-models` resolves from node_modules.
  const files = new Map<string, { group: string; file: VirtualFile }>();
  Object.entries(groups).forEach(([group, objects], i) => {
    const fileName = join(REPO_ROOT, `__rendered_objects_${i}__.ts`);
    files.set(fileName, { group, file: virtualFile(fileName, objects) });
  });
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2023,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, languageVersion, ...rest) => {
    const virtual = files.get(name);
    return virtual
      ? ts.createSourceFile(name, virtual.file.text, languageVersion)
      : getSourceFile(name, languageVersion, ...rest);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => files.has(name) || fileExists(name);
  const program = ts.createProgram([...files.keys()], options, host);

  const result: Record<string, string[]> = {};
  for (const [fileName, { group, file }] of files) {
    const source = program.getSourceFile(fileName);
    const problems: string[] = [];
    const diagnostics = [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ];
    const textLines = file.text.split('\n');
    for (const diagnostic of diagnostics) {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
      if (diagnostic.file === undefined || diagnostic.start === undefined) {
        problems.push(message);
        continue;
      }
      const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      const objectLine = line + 1 - file.offset;
      const owner = [...file.starts].reverse().find((s) => s.line <= objectLine);
      const at = owner ? `${owner.label} line ${objectLine - owner.line + 1}` : `line ${line + 1}`;
      problems.push(`${at} (${(textLines[line] ?? '').trim()}): ${message}`);
    }
    result[group] = problems;
  }
  return result;
}
