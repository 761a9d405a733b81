/**
 * The gRPC services the decision listener serves, loaded once per process: Envoy's
 * `envoy.service.auth.v3.Authorization` from the published v3 protos that
 * `@grpc/grpc-js-xds` ships (`deps/envoy-api`, with the googleapis, udpa/xds and
 * protoc-gen-validate protos they import beside it: read in place, never copied), and
 * the standard `grpc.health.v1.Health` from a small inline descriptor (the package ships
 * no health proto).
 *
 * The package directory is found through Node's resolution from this module, so the
 * same code loads the protos from `src/` under test and from the built `dist/`.
 *
 * Field names are kept as the protos spell them (`ok_response`, `headers_to_remove`),
 * enums read as their names, and absent fields read as their defaults (an absent
 * message as null), so a CheckRequest is read with plain property access.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  type GrpcObject,
  loadPackageDefinition,
  type ServiceClientConstructor,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { fromJSON, loadSync, type Options } from '@grpc/proto-loader';

const LOADER_OPTIONS: Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** The Envoy service's proto, relative to `deps/envoy-api`. */
const EXTERNAL_AUTH = 'envoy/service/auth/v3/external_auth.proto';

/** The include directories under the package's `deps/`, each a root of proto imports. */
const INCLUDE_DIRS = ['envoy-api', 'googleapis', 'xds', 'protoc-gen-validate'];

/** `grpc.health.v1` (grpc/grpc-proto `health.proto`), the `Check` method only. */
const HEALTH_JSON: Parameters<typeof fromJSON>[0] = {
  nested: {
    grpc: {
      nested: {
        health: {
          nested: {
            v1: {
              nested: {
                HealthCheckRequest: { fields: { service: { type: 'string', id: 1 } } },
                HealthCheckResponse: {
                  fields: { status: { type: 'ServingStatus', id: 1 } },
                  nested: {
                    ServingStatus: {
                      values: { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 },
                    },
                  },
                },
                Health: {
                  methods: {
                    Check: {
                      requestType: 'HealthCheckRequest',
                      responseType: 'HealthCheckResponse',
                      comment: '',
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
};

export interface DecisionServices {
  readonly authorization: ServiceDefinition;
  readonly health: ServiceDefinition;
}

const AUTHORIZATION = 'envoy.service.auth.v3.Authorization';
const HEALTH = 'grpc.health.v1.Health';

let loaded: { readonly envoy: GrpcObject; readonly health: GrpcObject } | undefined;

/** The `deps/` directory of the installed `@grpc/grpc-js-xds`. */
export function envoyProtoRoot(): string {
  const manifest = createRequire(import.meta.url).resolve('@grpc/grpc-js-xds/package.json');
  return join(dirname(manifest), 'deps');
}

/** Both packages, parsed on the first call (a few hundred milliseconds) and kept. */
function packages(): { readonly envoy: GrpcObject; readonly health: GrpcObject } {
  if (loaded !== undefined) return loaded;
  const root = envoyProtoRoot();
  const definition = loadSync(join(root, 'envoy-api', EXTERNAL_AUTH), {
    ...LOADER_OPTIONS,
    includeDirs: INCLUDE_DIRS.map((dir) => join(root, dir)),
  });
  loaded = {
    envoy: loadPackageDefinition(definition),
    health: loadPackageDefinition(fromJSON(HEALTH_JSON, LOADER_OPTIONS)),
  };
  return loaded;
}

/** The services' definitions, for `Server.addService`. */
export function decisionServices(): DecisionServices {
  const { envoy, health } = packages();
  return {
    authorization: (lookup(envoy, AUTHORIZATION) as ServiceClientConstructor).service,
    health: (lookup(health, HEALTH) as ServiceClientConstructor).service,
  };
}

/** A service's client constructor: tests ask as Envoy does, over the same protos. */
export function serviceClient(which: 'authorization' | 'health'): ServiceClientConstructor {
  const { envoy, health } = packages();
  return (
    which === 'health' ? lookup(health, HEALTH) : lookup(envoy, AUTHORIZATION)
  ) as ServiceClientConstructor;
}

function lookup(object: GrpcObject, name: string): unknown {
  let node: unknown = object;
  for (const part of name.split('.')) node = (node as Record<string, unknown> | undefined)?.[part];
  if (node === undefined) throw new Error(`${name} is not in the loaded protos`);
  return node;
}
