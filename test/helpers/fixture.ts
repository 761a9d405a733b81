/**
 * Test fixture: a real gateway on a loopback port 0, a real upstream that records what it
 * receives, real keys and a real clients file in a temp directory, and the gateway's log
 * lines captured for assertions. Everything is torn down in `t.after`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { TestContext } from 'node:test';
import { type App, createApp } from '../../src/app/createApp.js';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { loadConfig } from '../../src/config/loadConfig.js';
import type { Config, SigningAlgorithm } from '../../src/config/types.js';
import { validateConfig } from '../../src/config/validateConfig.js';
import { generateSigningKey, writeSigningKey } from '../../src/keys/generateKey.js';
import type { KeyRing } from '../../src/keys/keyRing.js';
import { loadKeyRing } from '../../src/keys/loadKeyRing.js';
import { type Clock, systemClock } from '../../src/lib/clock.js';
import type { DestinationStream } from '../../src/observability/logger.js';

export const CLIENT_ID = 'acme';
export const CLIENT_SECRET = 'acme-secret-0123456789abcdefghijklmnopqrstu';
export const TOKEN_PATH = '/v1/authentication/accesstoken';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

export interface Upstream {
  url: string;
  server: Server;
  received: ReceivedRequest[];
  /** Replace to change how the upstream answers. */
  handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;
}

export async function startUpstream(t: TestContext): Promise<Upstream> {
  const upstream: Upstream = {
    url: '',
    server: undefined as unknown as Server,
    received: [],
    handler: (req, res) => {
      const body = JSON.stringify({ path: req.url, method: req.method });
      res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'yes' });
      res.end(body);
    },
  };
  upstream.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      upstream.received.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body,
      });
      upstream.handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => upstream.server.listen(0, '127.0.0.1', resolve));
  const address = upstream.server.address() as { port: number };
  upstream.url = `http://127.0.0.1:${address.port}`;
  t.after(() => {
    upstream.server.closeAllConnections();
    return new Promise<void>((resolve) => upstream.server.close(() => resolve()));
  });
  return upstream;
}

export interface ClientSpec {
  id: string;
  secret: string;
  scopes: string[];
  lifetimeSeconds?: number;
  disabled?: boolean;
  /** The stored hash of `secret` (default: its `sha256:` hash). */
  hash?: string;
  /** More fields of the client's entry (OAuth: authMethods, jwksFile, audiences, …); `secret: ''` stores none. */
  extra?: Record<string, unknown>;
}

export const DEFAULT_CLIENTS: ClientSpec[] = [
  { id: CLIENT_ID, secret: CLIENT_SECRET, scopes: ['orders:read', 'orders:write'] },
  { id: 'reader', secret: 'reader-secret-0123456789abcdefghijklmnopq', scopes: ['orders:read'] },
  {
    id: 'gone',
    secret: 'gone-secret-0123456789abcdefghijklmnopqrs',
    scopes: ['orders:read'],
    disabled: true,
  },
];

export interface GatewayOptions {
  /** Extra settings merged over the defaults (routes default to a catch-all to the upstream). */
  settings?: (upstreamUrl: string) => Record<string, unknown>;
  clients?: ClientSpec[];
  /** Where the clients file goes, relative to the temp directory (default `clients.json`; `keys/clients.json` as the chart mounts it). */
  clientsFile?: string;
  clock?: Clock;
  upstream?: Upstream;
  /**
   * Also write the settings as a JSON config file (`<dir>/portaria.json`) and hand the app
   * a `configSource` that re-reads it, so routes reload (as `main.ts` does with --config).
   */
  configFile?: boolean;
  /** Where the app logs instead of the captured `logs` (which then stay empty). */
  logDestination?: DestinationStream;
  /** token.algorithm, and the algorithm of the key generated for it (default ES256). */
  algorithm?: SigningAlgorithm;
}

export interface Gateway {
  app: App;
  config: Config;
  url: string;
  adminUrl: string;
  /** The HTTP decision listener's URL (`mode: authorizer` or `both`), else ''. */
  authorizerUrl: string;
  /** The gRPC decision listener's address as `host:port`-bearing URL, else ''. */
  grpcUrl: string;
  upstream: Upstream;
  logs: string[];
  keyRing: KeyRing;
  dir: string;
  /** The config file, when started with `configFile: true`. */
  configFile?: string;
  /** POSTs credentials to the token operation and returns the access token. */
  token(clientId?: string, secret?: string): Promise<string>;
}

export async function startGateway(t: TestContext, options: GatewayOptions = {}): Promise<Gateway> {
  const upstream = options.upstream ?? (await startUpstream(t));
  const dir = await mkdtemp(join(tmpdir(), 'portaria-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const keysDir = join(dir, 'keys');
  const algorithm = options.algorithm ?? 'ES256';
  await writeSigningKey(keysDir, await generateSigningKey(algorithm, new Date()));
  const clients = (options.clients ?? DEFAULT_CLIENTS).map((c) => ({
    id: c.id,
    secrets: c.secret === '' ? [] : [{ hash: c.hash ?? hashGeneratedSecret(c.secret) }],
    scopes: c.scopes,
    ...(c.extra ?? {}),
    ...(c.lifetimeSeconds === undefined ? {} : { lifetimeSeconds: c.lifetimeSeconds }),
    ...(c.disabled === undefined ? {} : { disabled: c.disabled }),
  }));
  const clientsFile = join(dir, options.clientsFile ?? 'clients.json');
  await writeFile(clientsFile, JSON.stringify({ clients }));
  const custom = options.settings?.(upstream.url) ?? {};
  const settings = {
    admin: { host: '127.0.0.1', port: 0 },
    issuer: 'https://portaria.test',
    audience: 'partner-api',
    keys: { dir: keysDir },
    clients: { file: clientsFile },
    upstream: { default: { upstream: upstream.url } },
    log: { level: 'info' },
    // Token limits off unless a test passes its own `tokenLimits`: most tests fetch many
    // tokens from one address and one client.
    tokenLimits: {
      perAddress: { enabled: false },
      perClient: { enabled: false },
      failedSecretBackoff: { enabled: false },
    },
    ...custom,
    ...(options.algorithm === undefined
      ? {}
      : { token: { ...(custom as { token?: object }).token, algorithm } }),
    // A drain waits for idle keep-alive connections until their announced time is up:
    // at 1 s fetch does not keep them (undici subtracts its own margin), so the
    // teardown's drain ends with the test's last answer.
    server: {
      host: '127.0.0.1',
      port: 0,
      shutdownGraceMs: 2000,
      keepAliveTimeoutMs: 1000,
      ...((custom as { server?: Record<string, unknown> }).server ?? {}),
    },
  };
  const config = validateConfig(settings, { baseDir: dir });
  const configFile = options.configFile ? join(dir, 'portaria.json') : undefined;
  if (configFile !== undefined) {
    await writeFile(configFile, JSON.stringify(settings, null, 2));
  }
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') logs.push(line);
      callback();
    },
  });
  const app = await createApp({
    config,
    logDestination: options.logDestination ?? destination,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(configFile !== undefined
      ? {
          configSource: {
            file: configFile,
            reload: () => loadConfig({ file: configFile, env: {}, cwd: dir }),
          },
        }
      : {}),
  });
  const { publicUrl, adminUrl, authorizerUrl, grpcUrl } = await app.listen();
  t.after(() => app.shutdown());
  const keyRing = await loadKeyRing(keysDir, algorithm, options.clock ?? systemClock);
  const gateway: Gateway = {
    app,
    config,
    url: publicUrl,
    adminUrl,
    authorizerUrl,
    grpcUrl,
    upstream,
    logs,
    keyRing,
    dir,
    ...(configFile !== undefined ? { configFile } : {}),
    async token(clientId = CLIENT_ID, secret = CLIENT_SECRET) {
      const res = await fetch(publicUrl + TOKEN_PATH, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ clientId, clientSecret: secret }),
      });
      const body = (await res.json()) as Record<string, unknown>;
      if (res.status !== 200)
        throw new Error(`token request failed: ${res.status} ${JSON.stringify(body)}`);
      return body.token_de_acesso as string;
    },
  };
  return gateway;
}

/** Reads a problem-details response and checks its invariant parts. */
export async function problemOf(res: Response): Promise<Record<string, unknown>> {
  const type = res.headers.get('content-type');
  if (type !== 'application/problem+json')
    throw new Error(`expected problem+json, got ${type} (${res.status})`);
  return (await res.json()) as Record<string, unknown>;
}
