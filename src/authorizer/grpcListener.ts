/**
 * The gRPC decision listener (`authorizer.grpc`, on `authorizer.host`): a grpc-js server
 * with Envoy's `envoy.service.auth.v3.Authorization` (`grpcCheck.ts`) and the standard
 * `grpc.health.v1.Health` Check (SERVING, NOT_SERVING once shutdown began), so Envoy can
 * health-check the cluster over gRPC.
 *
 * Plain HTTP/2 without TLS: the listener answers the proxy beside it (a sidecar, the
 * mesh's gateway) over the cluster network; encrypting and authenticating that hop is the
 * mesh's job (its mTLS), and only `server.trustedProxies` get a decision anyway.
 *
 * A CheckRequest carries the original request's headers (Envoy may repeat the path and
 * authority as pseudo-headers), the client certificate and a few addresses: the largest
 * message taken is twice `server.maxHeaderBytes` for the headers, the certificate
 * header's bound for the certificate and 16 KiB for the rest (64 KiB with the defaults),
 * so a decision never reads more than the public listener would for the same request. A
 * larger one fails the RPC (RESOURCE_EXHAUSTED), which Envoy answers with 403.
 * Keepalive stays at grpc-js's defaults: Envoy keeps its connections and pings when told.
 */
import {
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import { MAX_HEADER_BYTES } from '../certificates/certificateHeaderReader.js';
import { ConfigError } from '../config/configError.js';
import { variableName } from '../config/environment.js';
import { decisionServices } from './envoyProtos.js';
import type { GrpcCheck } from './grpcCheck.js';

/** The service a health check may name, besides `''` (the whole server). */
const AUTHORIZATION_SERVICE = 'envoy.service.auth.v3.Authorization';

/** Room in a CheckRequest for what is neither headers nor the certificate. */
const OTHER_ATTRIBUTES_BYTES = 16 * 1024;

/** The largest CheckRequest read: see above. */
export function maxCheckRequestBytes(maxHeaderBytes: number): number {
  return 2 * maxHeaderBytes + MAX_HEADER_BYTES + OTHER_ATTRIBUTES_BYTES;
}

export interface GrpcListenerOptions {
  readonly host: string;
  readonly port: number;
  readonly maxHeaderBytes: number;
  readonly check: GrpcCheck;
  /** True once shutdown began: the health check answers NOT_SERVING. */
  readonly draining: () => boolean;
}

export interface GrpcListener {
  /** Binds; resolves with the listener's URL (`grpc://host:port`). */
  listen(): Promise<string>;
  /** Stops accepting, lets calls in flight finish within `graceMs`, then cuts the rest. */
  close(graceMs: number): Promise<void>;
}

interface HealthRequest {
  readonly service?: string;
}
interface HealthResponse {
  readonly status: 'SERVING' | 'NOT_SERVING';
}

export function createGrpcListener(options: GrpcListenerOptions): GrpcListener {
  const services = decisionServices();
  const maxBytes = maxCheckRequestBytes(options.maxHeaderBytes);
  const server = new Server({
    'grpc.max_receive_message_length': maxBytes,
    // A CheckResponse holds a few headers and a problem body.
    'grpc.max_send_message_length': maxBytes,
  });
  server.addService(services.authorization, { Check: options.check.check });
  server.addService(services.health, {
    Check(
      call: ServerUnaryCall<HealthRequest, HealthResponse>,
      callback: sendUnaryData<HealthResponse>,
    ) {
      const service = call.request?.service ?? '';
      if (service !== '' && service !== AUTHORIZATION_SERVICE) {
        callback({ code: status.NOT_FOUND, details: 'unknown service' });
        return;
      }
      callback(null, { status: options.draining() ? 'NOT_SERVING' : 'SERVING' });
    },
  });
  const { host, port } = options;
  let bound = false;
  return {
    listen() {
      const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
      return new Promise((resolve, reject) => {
        server.bindAsync(address, ServerCredentials.createInsecure(), (error, actual) => {
          if (error !== null) {
            reject(bindError(host, port, error));
            return;
          }
          bound = true;
          const shown = host.includes(':') ? `[${host}]` : host;
          resolve(`grpc://${shown}:${actual}`);
        });
      });
    },
    async close(graceMs) {
      if (bound) {
        await new Promise<void>((resolve) => {
          const grace = setTimeout(() => {
            server.forceShutdown();
            resolve();
          }, graceMs);
          server.tryShutdown(() => {
            clearTimeout(grace);
            resolve();
          });
        });
      } else {
        server.forceShutdown();
      }
      await options.check.responsesClosed();
    },
  };
}

const BIND_ERRORS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the address is already in use (another process, or another Portaria)',
  EACCES: 'not permitted (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'no such address on this machine',
};

/**
 * grpc-js reports a failed bind in its message only ("No address added out of total 1
 * resolved errors: [listen EADDRINUSE: …]"): the start-up error names the setting, as
 * the HTTP listeners' do (`app/servers.ts`).
 */
function bindError(host: string, port: number, error: Error): Error {
  const code = Object.keys(BIND_ERRORS).find((name) => error.message.includes(name));
  const why = code === undefined ? error.message : `${BIND_ERRORS[code]} (${code})`;
  const variable = variableName(['authorizer', 'grpc', 'port']);
  return new ConfigError([
    `authorizer.host/authorizer.grpc.port: cannot listen on ${host}:${port}: ${why}; change authorizer.grpc.port (${variable}) or authorizer.host`,
  ]);
}
