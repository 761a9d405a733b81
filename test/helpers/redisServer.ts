/**
 * A real `redis-server` on a free loopback port, started for a test and stopped after
 * it. When the binary is missing the test fails (in CI and locally alike): the Redis
 * tests never skip. `npm test` checks for it first (scripts/test-prerequisites.mjs) and, as
 * root, installs the Debian package `redis-server`.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** Stops the server (SIGTERM, no save); resolves once it has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port (after `stop`). */
  start(): Promise<void>;
  /** Freezes the process (SIGSTOP): connections stay open, nothing is answered. */
  pause(): void;
  /** Lets a paused process run again (SIGCONT). */
  resume(): void;
}

const BINARY = process.env.REDIS_SERVER ?? 'redis-server';

export function redisServerAvailable(): boolean {
  return spawnSync(BINARY, ['--version']).status === 0;
}

export interface RedisServerOptions {
  /** Require this password (`requirepass`, from a 0600 config file, never on the command line). */
  readonly password?: string;
}

export async function startRedis(
  t: TestContext,
  options: RedisServerOptions = {},
): Promise<RedisServer> {
  if (!redisServerAvailable()) {
    throw new Error(
      `${BINARY} not found: install the Debian package redis-server (apt-get install redis-server); npm test does as root`,
    );
  }
  const dir = await mkdtemp(join(tmpdir(), 'portaria-redis-'));
  const port = await freePort();
  const configFile: string[] = [];
  if (options.password !== undefined) {
    const file = join(dir, 'redis.conf');
    await writeFile(file, `requirepass "${options.password}"\n`, { mode: 0o600 });
    configFile.push(file);
  }
  let child: ChildProcess | null = null;

  const start = async (): Promise<void> => {
    if (child) return;
    const proc = spawn(
      BINARY,
      [
        ...configFile,
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--protected-mode',
        'yes',
        '--loglevel',
        'warning',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child = proc;
    proc.once('exit', () => {
      if (child === proc) child = null;
    });
    await waitForPort(port, 5000);
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    if (!proc) return;
    child = null;
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  };

  const pause = () => {
    child?.kill('SIGSTOP');
  };
  const resume = () => {
    child?.kill('SIGCONT');
  };

  await start();
  t.after(async () => {
    resume();
    await stop();
    await rm(dir, { recursive: true, force: true });
  });
  return { port, url: `redis://127.0.0.1:${port}`, stop, start, pause, resume };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.end('PING\r\n');
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`redis-server did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`);
}
