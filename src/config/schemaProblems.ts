/**
 * The schema check (`schema.ts`, compiled once by ajv): fills defaults in place and
 * words each refusal as one problem line with the setting's path (`routes[2].prefix: …`).
 */
import { Ajv, type ErrorObject } from 'ajv';
import { REMOVED_SETTINGS } from './removedSettings.js';
import { configSchema, MAX_WORKERS } from './schema.js';

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true, allowUnionTypes: true });
const validateSchema = ajv.compile(configSchema);

/** Checks `input` against the schema, filling its defaults in; the problems, if any. */
export function schemaProblems(input: unknown): string[] {
  if (validateSchema(input)) return [];
  const problems: string[] = [];
  for (const error of validateSchema.errors ?? []) {
    const problem = formatAjvError(error);
    if (problem !== null) problems.push(problem);
  }
  return problems;
}

/** One problem line; null for ajv's summary of a key error it already reported. */
function formatAjvError(error: ErrorObject): string | null {
  const path = pointerToPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  // A key refused by `propertyNames`: named with its path, once (ajv adds a summary).
  if (error.keyword === 'propertyNames') return null;
  const key = (error as ErrorObject & { propertyName?: string }).propertyName;
  if (key !== undefined) {
    return `${path || '(root)'}[${JSON.stringify(key)}]: is not a valid name (${error.message ?? 'invalid'})`;
  }
  // A number or a word: ajv's messages would name the two halves separately.
  if (path === 'server.workers') {
    return `server.workers: must be a whole number from 1 to ${MAX_WORKERS}, or "auto" (the CPUs available to the process)`;
  }
  switch (error.keyword) {
    case 'additionalProperties': {
      const setting = join(path, String(params.additionalProperty));
      const removed = REMOVED_SETTINGS.find((r) => r.path.join('.') === setting);
      return `${setting}: ${removed === undefined ? 'unknown setting' : removed.instead}`;
    }
    case 'required':
      return `${join(path, String(params.missingProperty))}: is required`;
    case 'enum':
      return `${path || '(root)'}: must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'oneOf':
      return `${path || '(root)'}: must be null or an object with "upstream"`;
    default:
      return `${path || '(root)'}: ${error.message ?? 'is invalid'}`;
  }
}

/** `/routes/2/prefix` → `routes[2].prefix`. */
function pointerToPath(pointer: string): string {
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(part) ? `[${part}]` : out === '' ? part : `.${part}`;
  }
  return out;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}
