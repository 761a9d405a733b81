/**
 * nginx (Debian package `nginx`; `NGINX` may name another binary) as a bench peer: one
 * worker (as HAProxy runs one thread and the gateway one process), its access log off in
 * every nginx row alike, in the foreground in a directory of its own, on a free loopback
 * port. `exampleConfig` renders a shipped docs/examples file with the bench's addresses,
 * by the plain replacements the file documents.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, waitForHttp } from './freePort.js';

const NGINX = process.env.NGINX ?? 'nginx';

export interface BenchNginx {
  readonly url: string;
  /** The master; its worker is a descendant (`treeCpuUs`). */
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

/** nginx's version line, or exit 2 with how to install it. */
export function requireNginx(): string {
  const probe = spawnSync(NGINX, ['-v'], { encoding: 'utf8' });
  if (probe.error !== undefined) {
    process.stderr.write(
      'bench: nginx is not installed. Debian/Ubuntu: `sudo apt-get install -y nginx` (with the auth_request module, as Debian builds it).\n',
    );
    process.exit(2);
  }
  return `${probe.stdout}${probe.stderr}`.split('\n')[0]?.trim() ?? 'nginx';
}

/** The addresses a shipped example names, for the bench's. */
export interface ExampleAddresses {
  /** Portaria's decision listener, `host:port` (the example's `127.0.0.1:8181`). */
  readonly decisions: string;
  /** The application, `host:port` (`127.0.0.1:8080`). */
  readonly application: string;
  /** The decision cache's directory (the cache example's `/var/cache/nginx/portaria`). */
  readonly cacheDir?: string;
}

function replaceOnce(text: string, from: string, to: string): string {
  if (text.split(from).length !== 2) throw new Error(`the nginx example has "${from}" not once`);
  return text.replace(from, to);
}

/** docs/examples/`name`, its addresses replaced, as a function of nginx's port. */
export async function exampleConfig(
  name: string,
  addresses: ExampleAddresses,
): Promise<(port: number) => string> {
  // From dist-test/bench/lib/ up to the repository.
  const file = fileURLToPath(new URL(`../../../docs/examples/${name}`, import.meta.url));
  let text = await readFile(file, 'utf8');
  text = replaceOnce(text, 'server 127.0.0.1:8181;', `server ${addresses.decisions};`);
  text = replaceOnce(text, 'server 127.0.0.1:8080;', `server ${addresses.application};`);
  if (addresses.cacheDir !== undefined) {
    text = replaceOnce(text, ' /var/cache/nginx/portaria ', ` ${addresses.cacheDir} `);
  }
  const rendered = text;
  return (port) => replaceOnce(rendered, 'listen 8000;', `listen 127.0.0.1:${port};`);
}

function mainConfig(root: string): string {
  // As root, nginx's workers would switch to `nobody`, who cannot enter the bench's
  // 0700 work directory.
  const user = process.getuid?.() === 0 ? `user ${userInfo().username};\n` : '';
  return `${user}worker_processes 1;
error_log ${root}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${root}/tmp/body;
  proxy_temp_path ${root}/tmp/proxy;
  fastcgi_temp_path ${root}/tmp/fastcgi;
  uwsgi_temp_path ${root}/tmp/uwsgi;
  scgi_temp_path ${root}/tmp/scgi;
  include ${root}/http.conf;
}
`;
}

/** Starts nginx in `dir` with the `http` context `http(port)`; resolves once it answers. */
export async function startNginx(
  dir: string,
  http: (port: number) => string,
  probePath = '/',
): Promise<BenchNginx> {
  await mkdir(join(dir, 'tmp'), { recursive: true });
  const port = await freePort();
  await writeFile(join(dir, 'http.conf'), http(port));
  await writeFile(join(dir, 'nginx.conf'), mainConfig(dir));
  const args = ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')];
  const check = spawnSync(NGINX, [...args, '-t'], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`nginx -t failed:\n${check.stdout}${check.stderr}`);
  const child: ChildProcess = spawn(
    NGINX,
    [...args, '-g', `daemon off; master_process on; pid ${join(dir, 'nginx.pid')};`],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const server: BenchNginx = {
    url,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
  try {
    await waitForHttp(url + probePath);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}
