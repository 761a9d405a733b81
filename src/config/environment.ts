/**
 * Settings from the environment, by one rule derived from the schema: every leaf setting
 * `a.bC.dE` is the variable `PORTARIA_A__B_C__D_E` (`PORTARIA_`, then each level of the
 * path in UPPER_SNAKE_CASE, levels joined by `__`). A leaf is any setting that is not a
 * section with named sub-settings: a number, a boolean, a string, a list or a map.
 *
 * A value is read by the setting's type: numbers as decimal numbers, booleans as `true`
 * or `false`, strings as they are, lists as a JSON array or comma-separated (lists of
 * objects, such as `routes`, only as JSON), maps and objects as JSON. An empty variable
 * counts as unset. The variable replaces the file's value whole (a list is not merged).
 *
 * Nothing here knows a setting by name: a setting added to the schema has its variable.
 * Seven short names of earlier releases stay as aliases; the two that Kubernetes also
 * sets for a Service (`PORTARIA_PORT`, `PORTARIA_ADMIN_PORT`) are retired. The variables
 * Kubernetes sets for Services are left alone (`serviceLinks.ts`); any other
 * `PORTARIA_*` variable that names no setting is a configuration problem (a misspelt
 * override must not be ignored silently).
 */
import { nearestName } from '../lib/nearestName.js';
import { configSchema } from './schema.js';
import { isServiceLink } from './serviceLinks.js';

export interface SettingVariable {
  /** The setting's path, `['server', 'port']`. */
  readonly path: readonly string[];
  readonly name: string;
  readonly schema: SchemaNode;
}

type SchemaNode = Readonly<Record<string, unknown>>;

export const ENV_PREFIX = 'PORTARIA_';

/** Variables that are not settings: the file itself, and the CLI's admin API address. */
export const NON_SETTING_VARIABLES: Readonly<Record<string, string>> = {
  PORTARIA_CONFIG: 'the configuration file, when --config is not given',
  PORTARIA_ADMIN_URL: 'the admin API address for "portaria revoke" (CLI only)',
};

/** Short names kept from earlier releases, each an alias of one setting's variable. */
export const VARIABLE_ALIASES: Readonly<Record<string, string>> = {
  PORTARIA_KEYS_DIR: 'keys.dir',
  PORTARIA_CLIENTS_FILE: 'clients.file',
  PORTARIA_LOG_LEVEL: 'log.level',
  PORTARIA_LOG_PRETTY: 'log.pretty',
  PORTARIA_ADMIN_TOKEN_FILE: 'admin.tokenFile',
  PORTARIA_REVOCATION_FILE: 'revocation.file',
  PORTARIA_REDIS_URL: 'redis.url',
};

/**
 * Short names no longer read, with the variable to set instead. Kubernetes sets
 * `PORTARIA_PORT` and `PORTARIA_ADMIN_PORT` (`tcp://address:port`) for Services named
 * `portaria` and `portaria-admin`, the chart's own; a plain value is refused naming the
 * replacement rather than ignored.
 */
export const RETIRED_VARIABLES: Readonly<Record<string, string>> = {
  PORTARIA_PORT: 'PORTARIA_SERVER__PORT',
  PORTARIA_ADMIN_PORT: 'PORTARIA_ADMIN__PORT',
};

/** `['tokenLimits', 'perAddress', 'ratePerSecond']` → `PORTARIA_TOKEN_LIMITS__PER_ADDRESS__RATE_PER_SECOND`. */
export function variableName(path: readonly string[]): string {
  return ENV_PREFIX + path.map(upperSnake).join('__');
}

function upperSnake(key: string): string {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1_$2')
    .toUpperCase();
}

/** Every leaf setting of `schema` with its variable, in schema order. */
export function settingVariables(schema: SchemaNode = configSchema): SettingVariable[] {
  const out: SettingVariable[] = [];
  const walk = (node: SchemaNode, path: string[]) => {
    const properties = node.properties as Record<string, SchemaNode> | undefined;
    if (path.length > 0 && (properties === undefined || node.type !== 'object')) {
      out.push({ path, name: variableName(path), schema: node });
      return;
    }
    for (const [key, child] of Object.entries(properties ?? {})) walk(child, [...path, key]);
  };
  walk(schema, []);
  return out;
}

const ALL = settingVariables();
const BY_NAME = new Map(ALL.map((v) => [v.name, v]));
const BY_PATH = new Map(ALL.map((v) => [v.path.join('.'), v]));
const ORDER = new Map(ALL.map((v, i) => [v.name, i]));

/** Schema order for settings (aliases, retired or not, with their setting), then the rest by name. */
function schemaOrder(a: string, b: string): number {
  const at = (name: string) => {
    const alias = VARIABLE_ALIASES[name];
    const variable =
      alias === undefined ? (RETIRED_VARIABLES[name] ?? name) : variableName(alias.split('.'));
    return ORDER.get(variable) ?? Number.POSITIVE_INFINITY;
  };
  return at(a) - at(b) || (a < b ? -1 : a > b ? 1 : 0);
}

/** One override read from the environment: where it goes and the variable it came from. */
export interface EnvOverride {
  readonly path: readonly string[];
  readonly variable: string;
  readonly value: unknown;
}

/**
 * The overrides the environment gives, and the problems with it (a value of the wrong
 * type, an unknown `PORTARIA_*` name, a retired short name, an alias and its canonical
 * name disagreeing). Kubernetes' service-link variables are left alone.
 * Problems are `path (VARIABLE): what`, or `VARIABLE: what` for a name that is no setting.
 */
export function environmentOverrides(env: Readonly<Record<string, string | undefined>>): {
  overrides: EnvOverride[];
  problems: string[];
} {
  const overrides: EnvOverride[] = [];
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const name of Object.keys(env).sort(schemaOrder)) {
    const text = env[name];
    if (!name.startsWith(ENV_PREFIX) || text === undefined || text === '') continue;
    if (name in NON_SETTING_VARIABLES) continue;
    const aliasOf = VARIABLE_ALIASES[name];
    const setting = aliasOf === undefined ? BY_NAME.get(name) : BY_PATH.get(aliasOf);
    if (setting === undefined) {
      // A setting's own variable is never a service link (no Service name derives one).
      if (isServiceLink(name, text)) continue;
      const instead = RETIRED_VARIABLES[name];
      problems.push(
        instead === undefined
          ? `${name}: no setting has this variable${nearestHint(name)}`
          : `${name}: no longer read (Kubernetes sets this name for its Services); set ${instead}`,
      );
      continue;
    }
    const at = setting.path.join('.');
    const earlier = seen.get(at);
    if (earlier !== undefined) {
      if (env[earlier] !== text) {
        problems.push(`${at} (${name}): ${earlier} sets it too, to another value; set one of them`);
      }
      continue;
    }
    seen.set(at, name);
    const parsed = parseValue(setting.schema, text);
    if ('problem' in parsed) problems.push(`${at} (${name}): ${parsed.problem}`);
    else overrides.push({ path: setting.path, variable: name, value: parsed.value });
  }
  return { overrides, problems };
}

/** The value of one setting from the environment (its variable, else its alias), unparsed. */
export function environmentText(
  env: Readonly<Record<string, string | undefined>>,
  path: string,
): string | undefined {
  const names = [variableName(path.split('.'))];
  for (const [alias, target] of Object.entries(VARIABLE_ALIASES)) {
    if (target === path) names.push(alias);
  }
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value !== '') return value;
  }
  return undefined;
}

const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
const INTEGER = /^-?(0|[1-9][0-9]*)$/;

function parseValue(node: SchemaNode, text: string): { value: unknown } | { problem: string } {
  const types = typesOf(node);
  if (types.has('integer') && types.size === 1) {
    return INTEGER.test(text) ? { value: Number(text) } : { problem: 'must be an integer' };
  }
  if (types.has('number') && types.size === 1) {
    return NUMBER.test(text) ? { value: Number(text) } : { problem: 'must be a number' };
  }
  if (types.has('boolean') && types.size === 1) {
    if (text === 'true' || text === 'false') return { value: text === 'true' };
    return { problem: 'must be true or false' };
  }
  if (types.has('array') && types.size === 1) return parseList(node, text);
  // A number or a word (`server.workers`: 4 or "auto"): a numeral is the number.
  if (types.has('string') && (types.has('integer') || types.has('number')) && NUMBER.test(text)) {
    return { value: Number(text) };
  }
  if (types.has('string') || types.size === 0) return { value: text };
  return parseJson(text, 'must be JSON');
}

/** A JSON array, or (for lists of plain values) the items separated by commas. */
function parseList(node: SchemaNode, text: string): { value: unknown } | { problem: string } {
  if (text.trimStart().startsWith('[')) return parseJson(text, 'must be a JSON array');
  const items = (node.items ?? {}) as SchemaNode;
  const itemTypes = typesOf(items);
  if (itemTypes.has('object') || itemTypes.has('array')) {
    return { problem: 'must be a JSON array (a list of objects has no comma-separated form)' };
  }
  const parts = text.split(',').map((part) => part.trim());
  const values: unknown[] = [];
  for (const part of parts) {
    const parsed = parseValue(items, part);
    if ('problem' in parsed) return { problem: `each item ${parsed.problem}` };
    values.push(parsed.value);
  }
  return { value: values };
}

function parseJson(text: string, problem: string): { value: unknown } | { problem: string } {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return { problem };
  }
}

/** The JSON types a schema node takes (`enum` values count by their own types). */
function typesOf(node: SchemaNode): Set<string> {
  const types = new Set<string>();
  const type = node.type;
  if (typeof type === 'string') types.add(type);
  else if (Array.isArray(type)) for (const t of type) if (t !== 'null') types.add(String(t));
  if (Array.isArray(node.enum)) {
    for (const v of node.enum) types.add(typeof v === 'number' ? 'number' : typeof v);
  }
  for (const key of ['oneOf', 'anyOf']) {
    const variants = node[key];
    if (!Array.isArray(variants)) continue;
    for (const variant of variants as SchemaNode[]) {
      for (const t of typesOf(variant)) if (t !== 'null') types.add(t);
      if (variant.type !== 'null') types.add('json');
    }
  }
  if (types.has('string') && types.has('json')) types.delete('string');
  if (node.properties !== undefined || node.additionalProperties !== undefined) {
    types.add('object');
  }
  return types;
}

/** ` (did you mean PORTARIA_X?)`: the known name with the fewest edits from `name`. */
function nearestHint(name: string): string {
  const best = nearestName(name, [
    ...BY_NAME.keys(),
    ...Object.keys(VARIABLE_ALIASES),
    ...Object.keys(NON_SETTING_VARIABLES),
  ]);
  return best === null ? '' : ` (did you mean ${best.name}?)`;
}
