/**
 * A real `redis-server` on a loopback port, started for a test and stopped after it. When
 * the binary is missing the test fails (in CI and locally alike): the Redis tests never
 * skip. `npm test` checks for it first (scripts/test-prerequisites.mjs) and, as root,
 * installs the Debian package `redis-server`.
 *
 * Redis cannot listen on port 0 and report the port, so a start picks a candidate port
 * and lets this very process prove it bound it: redis prints `Running mode=… port=…` only
 * after it listens on every port it was given, and exits when a bind fails. A failed bind
 * (another test file's server took the port) is retried on another candidate; no port is
 * reserved and released beforehand. Candidates lie below the kernel's ephemeral range,
 * where port-0 listeners and outgoing connections do not land.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** The server's own directory (its config, and any file it writes). */
  readonly dir: string;
  /** Stops the server (SIGKILL, no save); resolves once it has exited. */
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

/** TLS on the server's port (`port 0`, `tls-port`): its certificate, key and client CA. */
export interface RedisTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
  /** Require a client certificate signed by `caFile` (`tls-auth-clients yes`). */
  readonly authClients: boolean;
}

export interface RedisServerOptions {
  /** Require this password (`requirepass`, from a 0600 config file, never on the command line). */
  readonly password?: string;
  /** More redis.conf lines (ACL users, replication, …), also kept out of the command line. */
  readonly config?: readonly string[];
  /** Serve TLS only, on the port. */
  readonly tls?: RedisTlsFiles;
  /** Cluster mode: the cluster bus on port + 10000 (the candidates leave room for it). */
  readonly cluster?: boolean;
  /** Run as a sentinel (`redis-server <file> --sentinel`). */
  readonly sentinel?: boolean;
  /** The next candidate port (default: a random one in the range below). */
  readonly nextPort?: () => number;
}

/** Candidates: 10000–21999, so that a cluster bus (port + 10000) stays below 32768 too. */
const FIRST_PORT = 10_000;
const LAST_PORT = 21_999;
const ATTEMPTS = 20;

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
  const configFile = join(dir, 'redis.conf');
  let child: ChildProcess | null = null;
  let port = 0;

  /** One spawn on `candidate`: true when it listens, false when the port was taken. */
  const spawnOn = async (candidate: number): Promise<boolean> => {
    await writeFile(configFile, configText(options, candidate, dir), { mode: 0o600 });
    const proc = spawn(BINARY, [configFile, ...(options.sentinel ? ['--sentinel'] : [])], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const listening = await listeningOrExit(proc, candidate);
    if (listening === 'listening') {
      child = proc;
      proc.once('exit', () => {
        if (child === proc) child = null;
      });
      return true;
    }
    if (listening === 'in-use') return false;
    throw new Error(`${BINARY} did not start: ${listening}`);
  };

  const start = async (): Promise<void> => {
    if (child) return;
    // The same port again (clients know it): it was ours a moment ago, so retry briefly.
    for (let attempt = 0; attempt < 40; attempt += 1) {
      if (await spawnOn(port)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`${BINARY}: port ${port} stayed in use after a stop`);
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

  t.after(async () => {
    resume();
    await stop();
    await rm(dir, { recursive: true, force: true });
  });
  for (let attempt = 0; attempt < ATTEMPTS && child === null; attempt += 1) {
    const candidate = options.nextPort?.() ?? randomInt(FIRST_PORT, LAST_PORT + 1);
    if (await spawnOn(candidate)) port = candidate;
  }
  if (child === null) throw new Error(`${BINARY}: no free port after ${ATTEMPTS} candidates`);
  const scheme = options.tls ? 'rediss' : 'redis';
  return { port, url: `${scheme}://127.0.0.1:${port}`, dir, stop, start, pause, resume };
}

function configText(options: RedisServerOptions, port: number, dir: string): string {
  const lines = [
    ...(options.tls
      ? [
          'port 0',
          `tls-port ${port}`,
          `tls-cert-file ${options.tls.certFile}`,
          `tls-key-file ${options.tls.keyFile}`,
          `tls-ca-cert-file ${options.tls.caFile}`,
          `tls-auth-clients ${options.tls.authClients ? 'yes' : 'no'}`,
          ...(options.sentinel ? ['tls-replication yes'] : []),
        ]
      : [`port ${port}`]),
    'bind 127.0.0.1',
    `dir ${dir}`,
    'logfile ""',
    'loglevel notice',
    'protected-mode yes',
    ...(options.sentinel ? [] : ['save ""', 'appendonly no']),
    ...(options.cluster
      ? [
          'cluster-enabled yes',
          `cluster-port ${port + 10_000}`,
          `cluster-config-file ${join(dir, `nodes-${port}.conf`)}`,
          'cluster-node-timeout 2000',
        ]
      : []),
    ...(options.password === undefined ? [] : [`requirepass "${options.password}"`]),
    ...(options.config ?? []),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * Waits until `proc` reports it listens (then checks the port answers), or exits: 'in-use'
 * when a bind failed, else its output. Its output is drained afterwards (a full pipe
 * would block the server).
 */
function listeningOrExit(
  proc: ChildProcess,
  port: number,
): Promise<'listening' | 'in-use' | string> {
  return new Promise((resolve) => {
    let output = '';
    let settled = false;
    const settle = (value: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(value);
    };
    const read = (chunk: Buffer) => {
      if (settled) return;
      output = (output + chunk.toString('utf8')).slice(-16_384);
      if (/Running mode=/.test(output)) void answers(port).then(() => settle('listening'));
    };
    proc.stdout?.on('data', read);
    proc.stderr?.on('data', read);
    proc.once('exit', (code, signal) => {
      settle(
        /Address already in use/.test(output)
          ? 'in-use'
          : `exit ${code ?? signal}: ${output.trim().split('\n').slice(-5).join(' | ')}`,
      );
    });
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      settle(`no "Running mode" line within 10 s: ${output.slice(-500)}`);
    }, 10_000);
  });
}

/** Resolves once something accepts a TCP connection on `port`. */
async function answers(port: number): Promise<void> {
  for (let i = 0; i < 200; i += 1) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
