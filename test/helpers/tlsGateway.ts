/**
 * A gateway whose public listener speaks TLS (`helpers/fixture.ts` with `server.tls`),
 * with the certificates of `helpers/certificates.ts` (made here unless given), and
 * clients for it: undici agents that trust the test CA and present a chosen client
 * certificate, or none.
 *
 *   const gw = await startTlsGateway(t, { clientCertificates: 'require' });
 *   const res = await gw.fetch('/v1/orders/1', { headers: { authorization } }, gw.pki.client);
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { Agent, fetch as undiciFetch } from 'undici';
import type { ServerTlsConfig } from '../../src/config/types.js';
import { createTestPki, type IssuedCertificate, type TestPki } from './certificates.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type Gateway,
  type GatewayOptions,
  startGateway,
} from './fixture.js';
import { tempDir } from './process.js';

export interface TlsGatewayOptions extends Omit<GatewayOptions, 'settings'> {
  /** The certificates (default: a fresh `createTestPki`). */
  readonly pki?: TestPki;
  /** `server.tls` over `{enabled, certFile, keyFile}` of `pki.server`. */
  readonly tls?: Partial<ServerTlsConfig>;
  /** `off` by default; otherwise `clientCertificate.source: tls` with `pki.ca` trusted. */
  readonly clientCertificates?: ServerTlsConfig['clientCertificates'];
  /** More of `clientCertificate` (`crlFiles`, other `caFiles`). */
  readonly clientCertificate?: Record<string, unknown>;
  /** Settings merged over the rest (as `GatewayOptions.settings`). */
  readonly settings?: (upstreamUrl: string) => Record<string, unknown>;
}

export interface TlsGateway extends Gateway {
  readonly pki: TestPki;
  /**
   * An agent trusting the test CA, presenting `client` (none: no certificate), with one
   * connection per origin; closed in `t.after`.
   */
  agent(client?: IssuedCertificate | null, connect?: Record<string, unknown>): Agent;
  /** `fetch` of `path` through an agent presenting `client` (default: `pki.client`; null: none). */
  fetch(
    path: string,
    init?: Parameters<typeof undiciFetch>[1],
    client?: IssuedCertificate | null,
  ): ReturnType<typeof undiciFetch>;
  /** A token from the contract's operation, over a connection presenting `pki.client`. */
  tlsToken(clientId?: string, secret?: string): Promise<string>;
}

export async function startTlsGateway(
  t: TestContext,
  options: TlsGatewayOptions = {},
): Promise<TlsGateway> {
  const pki = options.pki ?? (await createTestPki(await tempDir(t, 'portaria-pki-')));
  const mode = options.clientCertificates ?? options.tls?.clientCertificates ?? 'off';
  const tls = {
    enabled: true,
    certFile: pki.server.certFile,
    keyFile: pki.server.keyFile,
    ...options.tls,
    clientCertificates: mode,
  };
  const certificates =
    mode === 'off'
      ? {}
      : {
          clientCertificate: {
            source: 'tls',
            caFiles: [pki.ca.certFile],
            ...options.clientCertificate,
          },
        };
  // Registered before the gateway's shutdown, so it runs first: the drain then waits for
  // no idle keep-alive connection of ours.
  const agents: Agent[] = [];
  t.after(() => Promise.all(agents.map((a) => a.destroy())));
  const gateway = await startGateway(t, {
    ...options,
    settings: (upstreamUrl) => {
      const custom = options.settings?.(upstreamUrl) ?? {};
      const server = (custom.server ?? {}) as Record<string, unknown>;
      return { ...certificates, ...custom, server: { ...server, tls } };
    },
  });
  const agent = (client: IssuedCertificate | null = pki.client, connect = {}): Agent => {
    // One connection per origin: requests in turn share it (keep-alive), whatever the
    // timing of undici's pool.
    const made = new Agent({
      connections: 1,
      connect: {
        ca: pki.ca.pem,
        ...(client === null ? {} : { cert: client.cert, key: client.key }),
        ...connect,
      },
    });
    agents.push(made);
    return made;
  };
  const byClient = new Map<IssuedCertificate | null, Agent>();
  const fetchVia: TlsGateway['fetch'] = (path, init = {}, client = pki.client) => {
    let dispatcher = byClient.get(client);
    if (dispatcher === undefined) {
      dispatcher = agent(client);
      byClient.set(client, dispatcher);
    }
    return undiciFetch(gateway.url + path, { ...init, dispatcher });
  };
  return {
    ...gateway,
    pki,
    agent,
    fetch: fetchVia,
    async tlsToken(clientId = CLIENT_ID, secret = CLIENT_SECRET) {
      const res = await fetchVia('/v1/authentication/accesstoken', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ clientId, clientSecret: secret }),
      });
      const body = (await res.json()) as Record<string, unknown>;
      if (res.status !== 200) {
        throw new Error(`token request failed: ${res.status} ${JSON.stringify(body)}`);
      }
      return body.token_de_acesso as string;
    },
  };
}

/** Writes `text` to `<dir>/<name>` and returns the path (for a bad file a test swaps in). */
export async function writeInto(dir: string, name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}
