/**
 * A real nginx (Debian's `nginx`; `NGINX` may name another binary) for tests: run as the
 * current user in a directory of its own (`-p`), with the test's `http` configuration,
 * in the foreground (`daemon off; master_process on`), its error log in that directory,
 * and stopped in `t.after`.
 *
 * Its port is taken the port-0 way, never found free and released: nginx refuses
 * `listen …:0`, so the test binds a listening socket on 127.0.0.1 port 0 itself and hands
 * that very socket to nginx as an inherited one (the `NGINX` environment variable nginx
 * uses for its binary upgrade, naming the descriptor), then closes its own copy. The
 * kernel-picked port stays bound from the bind to nginx's exit.
 *
 * A start that fails throws with the error log; at the end of a test, lines of the error
 * log at `error` or worse are written as the test's diagnostics.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { waitFor } from './wait.js';

export const NGINX = process.env.NGINX ?? 'nginx';

export interface NginxServer {
  /** The port nginx listens on, on 127.0.0.1. */
  readonly port: number;
  /** Its error log (the test's directory). */
  readonly errorLog: string;
  /** The error log so far. */
  errors(): Promise<string>;
  /** Stops nginx (SIGTERM, SIGKILL after 5 s); `t.after` does it too. */
  stop(): Promise<void>;
}

export interface NginxOptions {
  /** A directory of the test's own; nginx's files go in `<dir>/nginx`. */
  readonly dir: string;
  /**
   * The `http` context's configuration for the port nginx must listen on (its `server`
   * blocks say `listen 127.0.0.1:<port>`, with `ssl` as they need).
   */
  readonly http: (port: number) => string;
}

/** A listening socket on 127.0.0.1, port 0, and its descriptor. */
async function listeningSocket(): Promise<{ server: Server; port: number; fd: number }> {
  const server = createServer();
  server.listen({ host: '127.0.0.1', port: 0, backlog: 511 });
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  // The handle's descriptor: node:net has no public accessor for a server's.
  const fd = (server as unknown as { _handle: { fd: number } })._handle.fd;
  if (!Number.isInteger(fd) || fd < 0) throw new Error('no descriptor for the listening socket');
  return { server, port, fd };
}

function mainConfig(root: string): string {
  // As root, nginx's workers would switch to `nobody`, who cannot enter a test's 0700
  // directory: the current user runs them.
  const user = process.getuid?.() === 0 ? `user ${userInfo().username};\n` : '';
  return `${user}worker_processes 1;
error_log ${root}/error.log notice;
events { worker_connections 128; }
http {
  access_log ${root}/access.log;
  client_body_temp_path ${root}/tmp/body;
  proxy_temp_path ${root}/tmp/proxy;
  fastcgi_temp_path ${root}/tmp/fastcgi;
  uwsgi_temp_path ${root}/tmp/uwsgi;
  scgi_temp_path ${root}/tmp/scgi;
  include ${root}/http.conf;
}
`;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

export async function startNginx(t: TestContext, options: NginxOptions): Promise<NginxServer> {
  const root = join(options.dir, 'nginx');
  await mkdir(join(root, 'tmp'), { recursive: true });
  const errorLog = join(root, 'error.log');
  await writeFile(errorLog, '');
  const errors = () => readFile(errorLog, 'utf8');
  const socket = await listeningSocket();
  await writeFile(join(root, 'http.conf'), options.http(socket.port));
  await writeFile(join(root, 'nginx.conf'), mainConfig(root));
  const child = spawn(
    NGINX,
    [
      '-p',
      root,
      '-e',
      errorLog,
      '-c',
      join(root, 'nginx.conf'),
      '-g',
      `daemon off; master_process on; pid ${join(root, 'nginx.pid')};`,
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe', socket.fd],
      env: { ...process.env, NGINX: '3;' },
    },
  );
  // nginx holds the socket now; ours is closed without unbinding it.
  socket.server.close();
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  t.after(async () => {
    await stop(child);
    // The test's directory may be gone already (its removal was registered first).
    const bad = (await errors().catch(() => ''))
      .split('\n')
      .filter((line) => /\[(error|crit|alert|emerg)\]/.test(line));
    if (bad.length > 0) t.diagnostic(`nginx error log:\n${bad.join('\n')}`);
  });
  try {
    await waitFor(
      'nginx to start its worker',
      async () => {
        if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}`);
        return /start worker process/.test(await errors()) ? true : undefined;
      },
      10_000,
      20,
    );
  } catch (error) {
    await stop(child);
    throw new Error(
      `nginx did not start (${(error as Error).message}):\n${stderr}${await errors()}`,
    );
  }
  return { port: socket.port, errorLog, errors, stop: () => stop(child) };
}
