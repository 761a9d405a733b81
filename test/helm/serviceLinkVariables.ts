/**
 * The variables the kubelet sets in a pod for the Services of its namespace while
 * `enableServiceLinks` is on, written out from Kubernetes' own rule
 * (`pkg/kubelet/envvars/envvars.go`, `FromServices`): for a Service N with a cluster IP,
 * `N_SERVICE_HOST`, `N_SERVICE_PORT` (first port), `N_SERVICE_PORT_<NAME>` (each named
 * port), then the Docker-link forms `N_PORT` (first port) and per port
 * `N_PORT_<port>_<PROTO>`, `…_PROTO`, `…_PORT`, `…_ADDR`. N is the Service name
 * upper-cased with `-` as `_`. A Service without a cluster IP (headless) gets none.
 */
import type { K8sObject } from './helm.js';

export interface ServicePort {
  readonly name?: string;
  readonly port: number;
  readonly protocol?: string;
}

export interface ServiceShape {
  readonly name: string;
  readonly clusterIP: string;
  readonly ports: readonly ServicePort[];
}

/** The rendered Services, given the cluster IPs a cluster would assign them, in order. */
export function servicesOf(
  objects: readonly K8sObject[],
  clusterIPs: readonly string[],
): ServiceShape[] {
  const services = objects.filter((o) => o.kind === 'Service');
  return services.map((service, i) => {
    const spec = service.spec as { ports?: ServicePort[] };
    const clusterIP = clusterIPs[i];
    if (clusterIP === undefined) throw new Error(`no cluster IP for Service ${i}`);
    return { name: service.metadata.name, clusterIP, ports: spec.ports ?? [] };
  });
}

export function serviceLinkVariables(services: readonly ServiceShape[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const service of services) {
    const first = service.ports[0];
    if (service.clusterIP === 'None' || service.clusterIP === '' || first === undefined) continue;
    const prefix = variablePart(service.name);
    env[`${prefix}_SERVICE_HOST`] = service.clusterIP;
    env[`${prefix}_SERVICE_PORT`] = String(first.port);
    for (const port of service.ports) {
      if (port.name) env[`${prefix}_SERVICE_PORT_${variablePart(port.name)}`] = String(port.port);
    }
    service.ports.forEach((port, i) => {
      const protocol = port.protocol ?? 'TCP';
      const address = `${protocol.toLowerCase()}://${joinHostPort(service.clusterIP, port.port)}`;
      if (i === 0) env[`${prefix}_PORT`] = address;
      const portPrefix = `${prefix}_PORT_${port.port}_${protocol.toUpperCase()}`;
      env[portPrefix] = address;
      env[`${portPrefix}_PROTO`] = protocol.toLowerCase();
      env[`${portPrefix}_PORT`] = String(port.port);
      env[`${portPrefix}_ADDR`] = service.clusterIP;
    });
  }
  return env;
}

function variablePart(name: string): string {
  return name.replaceAll('-', '_').toUpperCase();
}

/** Go's net.JoinHostPort: an IPv6 address in brackets. */
function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
