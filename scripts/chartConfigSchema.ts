/**
 * The `config` part of the chart's values schema, derived from the gateway's own
 * configuration schema (`src/config/schema.ts`): the same rules, minus the settings the
 * chart owns (listeners, file locations, the Redis URL, TLS on and its files), so `helm install` refuses an
 * unknown or misspelt gateway setting before any pod starts, and refuses a chart-owned
 * setting that would disagree with the pod (ports, mounts).
 *
 * `writeChartSchema.ts` writes it into `helm/portaria/values.schema.json`; a
 * test compares, so the chart and the gateway cannot drift apart.
 */
import { REMOVED_SETTINGS } from '../src/config/removedSettings.js';
import { configSchema } from '../src/config/schema.js';

/** Settings the chart sets itself, as paths of `properties` names. */
export const CHART_OWNED_SETTINGS: readonly (readonly string[])[] = [
  ['server', 'host'],
  ['server', 'port'],
  ['admin'],
  ['keys', 'dir'],
  ['clients'],
  ['revocation', 'file'],
  ['revocation', 'queueFile'],
  ['redis', 'url'],
  ['redis', 'passwordFile'],
  ['redis', 'username'],
  ['redis', 'tls'],
  ['redis', 'sentinel'],
  ['redis', 'cluster'],
  // tls.enabled and tls.secret; clientCertificate.ca and .crl (the files the pod mounts).
  ['server', 'tls', 'enabled'],
  ['server', 'tls', 'certFile'],
  ['server', 'tls', 'keyFile'],
  ['clientCertificate', 'caFiles'],
  ['clientCertificate', 'crlFiles'],
  // The top-level value `profile` (docs/fapi.md).
  ['profile'],
  // The top-level values `mode` and `authorizer` (the decision ports are the pod's).
  ['mode'],
  ['authorizer'],
];

type JsonObject = { [key: string]: unknown };

export function chartConfigSchema(): JsonObject {
  const schema = structuredClone(configSchema) as unknown as JsonObject;
  for (const path of CHART_OWNED_SETTINGS) {
    let node = schema;
    for (const name of path.slice(0, -1)) {
      node = (node.properties as JsonObject)[name] as JsonObject;
    }
    const properties = node.properties as JsonObject;
    const last = path[path.length - 1] as string;
    if (!(last in properties)) {
      throw new Error(
        `config schema has no setting ${path.join('.')}: update CHART_OWNED_SETTINGS`,
      );
    }
    delete properties[last];
  }
  // Let removed settings through the schema, so the chart's fail guard names what
  // replaces them (a schema error could only call them unknown).
  for (const { path, instead } of REMOVED_SETTINGS) {
    let node = schema;
    for (const name of path.slice(0, -1)) {
      node = (node.properties as JsonObject)[name] as JsonObject;
    }
    (node.properties as JsonObject)[path[path.length - 1] as string] = {
      description: `Removed: ${instead}. The chart refuses it.`,
    };
  }
  return {
    description:
      "The gateway's settings (portaria.yaml) other than the chart-owned ones: derived from src/config/schema.ts by scripts/writeChartSchema.ts.",
    ...schema,
  };
}
