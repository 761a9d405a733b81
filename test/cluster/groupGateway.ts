/**
 * Starts the real gateway binary with `server.workers` > 1 (a primary and its workers)
 * on loopback in front of a real upstream, in a process group of its own: `t.after`
 * kills the whole group (primary and every worker, replaced ones included) even when a
 * test failed half way. Every stdout line is kept, parsed as JSON on demand.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import {
  type GatewayFiles,
  type ListeningUrls,
  listeningUrlsIn,
  MAIN_JS,
  tempDir,
  testEnv,
  waitForStatus,
  writeGatewayFiles,
} from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

export const SECRET = 'group-secret-0123456789abcdefghijklmnopqrstuvw';
export const ADMIN_TOKEN = 'group-admin-token-0123456789abcdef';

export interface Upstream {
  readonly url: string;
  /** Requests received. */
  received: number;
}

/** An upstream answering every request 200 `{"ok":true}` at once. */
export async function startUpstream(t: TestContext): Promise<Upstream> {
  const upstream = { url: '', received: 0 };
  const server: Server = createServer((req, res) => {
    upstream.received++;
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((done) => server.close(() => done()));
  });
  upstream.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return upstream;
}

export interface Group {
  readonly dir: string;
  /** The files, and the ports the group took (its primary's "listening" line). */
  readonly files: GatewayFiles & ListeningUrls;
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** stdout lines so far, parsed. */
  lines(): Record<string, unknown>[];
  /** stdout as written. */
  stdout(): string;
  stderr(): string;
  /** Pids of workers started so far (from the primary's `worker started` lines). */
  workerPids(): number[];
}

/**
 * Writes the files (keys, clients `acme` and `other` and `extraClients` as written, admin
 * token) and starts the group.
 */
export async function startGroup(
  t: TestContext,
  workers: number,
  settings: Record<string, unknown>,
  extraClients: readonly Record<string, unknown>[] = [],
): Promise<Group> {
  const dir = await tempDir(t, 'portaria-group-');
  await writeFile(join(dir, 'admin.token'), ADMIN_TOKEN);
  const server = (settings.server ?? {}) as Record<string, unknown>;
  const written = await writeGatewayFiles(
    dir,
    [
      ['acme', SECRET, ['orders:read']],
      ['other', SECRET, ['orders:read']],
    ],
    { log: { level: 'info' }, ...settings, server: { ...server, workers } },
  );
  // The admin token file goes in the admin section writeGatewayFiles wrote.
  const config = JSON.parse(await readFile(written.configFile, 'utf8'));
  config.admin.tokenFile = 'admin.token';
  await writeFile(written.configFile, JSON.stringify(config, null, 2));
  if (extraClients.length > 0) {
    const clientsFile = join(dir, 'clients.json');
    const { clients } = JSON.parse(await readFile(clientsFile, 'utf8'));
    await writeFile(clientsFile, JSON.stringify({ clients: [...clients, ...extraClients] }));
  }

  const child = spawn(process.execPath, [MAIN_JS, '--config', written.configFile], {
    cwd: dir,
    env: testEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    child.once('exit', (code, signal) => done({ code, signal }));
  });
  let files: GatewayFiles & ListeningUrls = {
    ...written,
    publicUrl: '',
    adminUrl: '',
    publicPort: 0,
    adminPort: 0,
  };
  const group: Group = {
    dir,
    get files() {
      return files;
    },
    child,
    exited,
    lines: () =>
      out
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    stdout: () => out,
    stderr: () => err,
    workerPids: () =>
      group
        .lines()
        .filter((l) => l.msg === 'worker started')
        .map((l) => l.pid as number),
  };
  t.after(async () => {
    const pids = [child.pid, ...safePids(group)];
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // The group is gone already.
    }
    for (const pid of pids) {
      try {
        if (pid !== undefined) process.kill(pid, 'SIGKILL');
      } catch {
        // Gone.
      }
    }
    if (child.exitCode === null && child.signalCode === null) await exited;
  });
  try {
    // Loaded machines start each worker in seconds.
    const stopped = exited.then(({ code }) => {
      throw new Error(`the gateway exited (${code})`);
    });
    const urls = await Promise.race([
      waitFor('the "listening" line', () => listeningUrlsIn(out), 60_000, 50),
      stopped,
    ]);
    files = { ...written, ...urls };
    await Promise.race([waitForStatus(`${files.adminUrl}/readyz`, 200, 60_000), stopped]);
  } catch (error) {
    throw new Error(`group did not get ready: ${(error as Error).message}\n${out}\n${err}`);
  }
  return group;
}

function safePids(group: Group): number[] {
  try {
    return group.workerPids();
  } catch {
    return [];
  }
}

/** Whether a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers: Record<string, string | string[] | undefined>;
}

/** One request on a connection of its own (node:cluster hands connections to workers in turn). */
export function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        headers: { connection: 'close', ...options.headers },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A token for `clientId` (secret `SECRET` unless given). */
export async function tokenFor(group: Group, clientId = 'acme', secret = SECRET): Promise<Answer> {
  return send(`${group.files.publicUrl}/v1/authentication/accesstoken`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, clientSecret: secret }),
  });
}

export async function accessToken(group: Group, clientId = 'acme'): Promise<string> {
  const answer = await tokenFor(group, clientId);
  if (answer.status !== 200) throw new Error(`token: ${answer.status} ${answer.body}`);
  return (JSON.parse(answer.body) as { token_de_acesso: string }).token_de_acesso;
}

/** The `jti` claim of a JWT (its payload read without verification). */
export function jtiOf(token: string): string {
  const payload = token.split('.')[1] ?? '';
  return (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { jti: string }).jti;
}

/** `POST /admin/v1/revocations` with the admin token. */
export function revoke(group: Group, body: Record<string, unknown>): Promise<Answer> {
  return send(`${group.files.adminUrl}/admin/v1/revocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify(body),
  });
}

/** `count` requests of `token` to `/v1/orders/<i>`, `concurrency` at a time, each on a new connection. */
export async function protectedRequests(
  group: Group,
  token: string,
  count: number,
  concurrency = 8,
): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const answer = await send(`${group.files.publicUrl}/v1/orders/${i}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      statuses.push(answer.status);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return statuses;
}

/** Waits until `count` stdout lines match `match`. */
export function waitForLines(
  group: Group,
  what: string,
  match: (line: Record<string, unknown>) => boolean,
  count: number,
  timeoutMs = 30_000,
): Promise<Record<string, unknown>[]> {
  return waitFor(
    what,
    () => {
      const found = group.lines().filter(match);
      return found.length >= count ? found : undefined;
    },
    timeoutMs,
    50,
  );
}
