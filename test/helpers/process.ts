/**
 * Runs the real gateway process (`dist-test/src/main.js`) for end-to-end tests: a config
 * directory with real keys and a real clients file, listeners on loopback port 0 (the
 * gateway picks its ports and its "listening" line says which: `listening()`), the
 * child's output collected, and the child killed in `t.after` if a test left it running.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { generateSigningKey, writeSigningKey } from '../../src/keys/generateKey.js';
import { waitFor } from './wait.js';

/** `dist-test/src/main.js`, next to this compiled helper. */
export const MAIN_JS = resolve(dirname(fileURLToPath(import.meta.url)), '../../src/main.js');

export interface ProcessResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `command` to its end and collects its output; `input` (default none) is its whole
 * stdin. With `timeoutMs`, a child still running then is killed (SIGKILL).
 */
export function runToEnd(
  command: string,
  args: readonly string[],
  options: { env: Record<string, string>; cwd?: string; input?: string; timeoutMs?: number },
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** This process's environment without `PORTARIA_*` (the developer's own settings), plus `extra`. */
export function testEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith('PORTARIA_')) env[name] = value;
  }
  return Object.assign(env, extra);
}

/**
 * An origin nothing listens on, for refused connections: port 47 is privileged and below
 * the kernel's ephemeral range, so no server a test starts on port 0 takes it (a port
 * found free and released could be bound by another test file meanwhile), and fetch
 * does not block it (it blocks 9, discard, as a "bad port").
 */
export const NOBODY_LISTENS = 'http://127.0.0.1:47';

export async function tempDir(t: TestContext, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export interface GatewayFiles {
  readonly configFile: string;
}

/**
 * Writes a signing key, a clients file (one client per `[id, secret, scopes]`) and a
 * config file (JSON, which is YAML) into `dir`, with the given settings and both
 * listeners on 127.0.0.1 port 0 unless `settings` name a port: the running process says
 * which ports it took (`RunningProcess.listening()`).
 */
export async function writeGatewayFiles(
  dir: string,
  clients: [string, string, string[]][],
  settings: Record<string, unknown>,
): Promise<GatewayFiles> {
  await writeSigningKey(join(dir, 'keys'), await generateSigningKey('ES256', new Date()));
  const entries = clients.map(([id, secret, scopes]) => ({
    id,
    secrets: [{ hash: hashGeneratedSecret(secret) }],
    scopes,
  }));
  await writeFile(join(dir, 'clients.json'), JSON.stringify({ clients: entries }));
  const server = (settings.server ?? {}) as Record<string, unknown>;
  const admin = (settings.admin ?? {}) as Record<string, unknown>;
  const config = {
    ...settings,
    server: { host: '127.0.0.1', port: 0, ...server },
    admin: { host: '127.0.0.1', port: 0, ...admin },
    keys: { dir: 'keys' },
    clients: { file: 'clients.json' },
  };
  const configFile = join(dir, 'portaria.yaml');
  await writeFile(configFile, JSON.stringify(config, null, 2));
  return { configFile };
}

/** Where a started gateway listens, from its "listening" log line. */
export interface ListeningUrls {
  readonly publicUrl: string;
  readonly adminUrl: string;
  readonly publicPort: number;
  readonly adminPort: number;
}

/**
 * The URLs of the first "listening" line in `text` naming both listeners (a worker of a
 * group names only the public one; its primary names both): JSON lines, or pino-pretty's
 * `publicUrl: "…"` lines. Undefined while there is none.
 */
export function listeningUrlsIn(text: string): ListeningUrls | undefined {
  // Complete lines only: the last one may still be arriving.
  for (const line of text.split('\n').slice(0, -1)) {
    if (!line.startsWith('{') || !line.includes('"listening"')) continue;
    const { msg, publicUrl, adminUrl } = JSON.parse(line) as Record<string, unknown>;
    if (msg === 'listening' && typeof publicUrl === 'string' && typeof adminUrl === 'string') {
      if (adminUrl !== '') return urlsOf(publicUrl, adminUrl);
    }
  }
  // pino-pretty: `[time] INFO: listening`, then one indented `name: value` line per field.
  const block = /: listening\n((?: {4}\S.*\n)+)/.exec(text)?.[1] ?? '';
  const publicUrl = /^ {4}publicUrl: "(http:\/\/[^"]+)"$/m.exec(block)?.[1];
  const adminUrl = /^ {4}adminUrl: "(http:\/\/[^"]+)"$/m.exec(block)?.[1];
  return publicUrl === undefined || adminUrl === undefined
    ? undefined
    : urlsOf(publicUrl, adminUrl);
}

function urlsOf(publicUrl: string, adminUrl: string): ListeningUrls {
  return {
    publicUrl,
    adminUrl,
    publicPort: Number(new URL(publicUrl).port),
    adminPort: Number(new URL(adminUrl).port),
  };
}

export interface RunningProcess {
  readonly child: ChildProcess;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code and signal once the child exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits until the stream's text matches, or throws after `timeoutMs`. */
  waitForOutput(stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Waits for the "listening" line on stdout: the ports the gateway took. */
  listening(timeoutMs?: number): Promise<ListeningUrls>;
}

/** Spawns `node MAIN_JS ...args` without inherited PORTARIA_* variables; killed in `t.after`. */
export function runGateway(
  t: TestContext,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; nodeArgs?: string[] } = {},
): RunningProcess {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith('PORTARIA_')) env[name] = value;
  }
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), MAIN_JS, ...args], {
    cwd: options.cwd ?? process.cwd(),
    env: { ...env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
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
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForOutput(stream, pattern, timeoutMs = 5000) {
      return waitFor(
        `${JSON.stringify(pattern.source)} on ${stream}`,
        () => {
          const text = stream === 'stdout' ? out : err;
          if (pattern.test(text)) return text;
          if (child.exitCode !== null) {
            throw new Error(`process exited (${child.exitCode}) before ${pattern}: ${out}${err}`);
          }
          return undefined;
        },
        timeoutMs,
        20,
      );
    },
    listening(timeoutMs = 10_000) {
      return waitFor(
        'the "listening" line on stdout',
        () => {
          const urls = listeningUrlsIn(out);
          if (urls !== undefined) return urls;
          if (child.exitCode !== null) {
            throw new Error(`process exited (${child.exitCode}) before listening: ${out}${err}`);
          }
          return undefined;
        },
        timeoutMs,
        20,
      );
    },
  };
}

/** Polls `GET url` until it answers `status` (connection errors count as not yet). */
export function waitForStatus(url: string, status: number, timeoutMs = 5000): Promise<true> {
  return waitFor(
    `${url} → ${status}`,
    async () => {
      try {
        const res = await fetch(url);
        await res.arrayBuffer();
        return res.status === status ? true : undefined;
      } catch {
        return undefined;
      }
    },
    timeoutMs,
    25,
  );
}
