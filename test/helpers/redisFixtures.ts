/** Small helpers shared by the Redis revocation tests (admin API calls, bearer calls, tokens). */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RedisConfig } from '../../src/config/types.js';
import type { RedisServer } from './redisServer.js';
import { waitFor } from './wait.js';

export const ADMIN_TOKEN = 'redis-admin-token-0123456789abcdef';
export const TOKEN_PATH = '/v1/authentication/accesstoken';
/** The key prefix the store tests use (the default). */
export const PREFIX = 'portaria:';

/** The settings of `redis` left at their defaults (no user, TLS, Sentinel or Cluster). */
export const REDIS_DEFAULTS = {
  username: null,
  passwordFile: null,
  tls: { enabled: false, caFile: null, certFile: null, keyFile: null, serverName: null },
  sentinel: { masterName: null, nodes: [], username: null, passwordFile: null },
  cluster: { nodes: [] },
} as const satisfies Partial<RedisConfig>;

/** The Redis settings of a store under test: short timeouts, the test server's URL. */
export function redisConfig(
  server: RedisServer | string,
  extra: Partial<RedisConfig> = {},
): RedisConfig {
  return {
    ...REDIS_DEFAULTS,
    url: typeof server === 'string' ? server : server.url,
    keyPrefix: PREFIX,
    connectTimeoutMs: 500,
    commandTimeoutMs: 500,
    ...extra,
  };
}

/** Writes the admin token file into `dir` and returns its path. */
export async function writeAdminToken(dir: string): Promise<string> {
  const file = join(dir, 'admin-token');
  await writeFile(file, `${ADMIN_TOKEN}\n`, { mode: 0o600 });
  return file;
}

/** POST /admin/v1/revocations with `body`; returns the status and the parsed body. */
export async function revokeVia(
  adminUrl: string,
  body: Record<string, unknown>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${adminUrl}/admin/v1/revocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The access token issued by the gateway at `url` for the client credentials. */
export async function issueToken(url: string, clientId: string, secret: string): Promise<string> {
  const res = await fetch(url + TOKEN_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, clientSecret: secret }),
  });
  const body = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`token request: ${res.status} ${JSON.stringify(body)}`);
  return body.token_de_acesso as string;
}

/** A bearer call through the gateway: its status and problem `tipo` code (if any). */
export async function callWith(
  url: string,
  token: string,
  method = 'GET',
): Promise<{ status: number; code: string | undefined }> {
  const res = await fetch(`${url}/v1/orders/1`, {
    method,
    headers: { authorization: `Bearer ${token}` },
  });
  const text = await res.text();
  const problem = res.headers.get('content-type')?.startsWith('application/problem+json');
  const code =
    problem && text !== ''
      ? String((JSON.parse(text) as { tipo: string }).tipo).replace(/^.*:/, '')
      : undefined;
  return { status: res.status, code };
}

/** Polls until the gateway refuses `token` as revoked; returns the time it took (ms). */
export async function refusedAsRevoked(url: string, token: string, timeoutMs = 2000) {
  const started = performance.now();
  await waitFor(
    `${url} refuses the token as revoked`,
    async () => {
      const { status, code } = await callWith(url, token);
      return status === 401 && code === 'token-revoked' ? true : undefined;
    },
    timeoutMs,
    5,
  );
  return performance.now() - started;
}

/** GET /readyz: status and body. */
export async function readyz(
  adminUrl: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${adminUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
