/**
 * The C peer: HAProxy (Debian package `haproxy`, 2.5 or later for `jwt_verify`) in front
 * of the bench upstream, one thread (`nbthread 1`), verifying every request: the bearer
 * token (`http_auth_bearer`), `alg` ES256, the ES256 signature with the bench's public key
 * (`jwt_verify`), `exp` against the clock, `iss` and `aud`; anything else is denied 401.
 * HAProxy keeps no cache of verified tokens, so every request pays a signature check.
 *
 * `startHaproxy` refuses to hand out a peer that would forward everything: it first
 * proves that a valid token passes and that a token signed by another key, an expired
 * one, a wrong issuer, a wrong audience and a missing token are each refused (401/403).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BENCH_AUDIENCE, BENCH_ISSUER } from '../lib/benchClaims.js';
import { type BenchKey, createBenchKey, mintToken } from '../lib/benchKey.js';
import { freePort, waitForHttp } from '../lib/freePort.js';

export interface Haproxy {
  readonly url: string;
  readonly pid: number | undefined;
  readonly version: string;
  stop(): Promise<void>;
}

/** HAProxy's version line; installs the Debian package when missing and running as root, else exit 2. */
export function ensureHaproxy(): string {
  const probe = () => spawnSync('haproxy', ['-v'], { encoding: 'utf8' });
  let found = probe();
  if (found.error !== undefined) {
    if (process.getuid?.() !== 0) {
      process.stderr.write(
        'bench: haproxy is not installed and this is not root. Debian/Ubuntu: `sudo apt-get install -y haproxy` (2.5 or later, for jwt_verify).\n',
      );
      process.exit(2);
    }
    process.stdout.write('haproxy missing: apt-get install -y haproxy …\n');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    let install = spawnSync('apt-get', ['install', '-y', 'haproxy'], { stdio: 'inherit', env });
    if (install.status !== 0) {
      spawnSync('apt-get', ['update'], { stdio: 'inherit', env });
      install = spawnSync('apt-get', ['install', '-y', 'haproxy'], { stdio: 'inherit', env });
    }
    found = probe();
    if (install.status !== 0 || found.error !== undefined) {
      process.stderr.write('bench: installing haproxy failed\n');
      process.exit(2);
    }
  }
  return found.stdout.split('\n')[0]?.trim() ?? 'haproxy';
}

/** The configuration: one frontend verifying, one backend to the upstream. */
export function haproxyConfig(port: number, upstream: URL, publicKeyFile: string): string {
  return `global
  nbthread 1
  maxconn 4096
  tune.bufsize 32768

defaults
  mode http
  option http-keep-alive
  http-reuse always
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s

frontend verify
  bind 127.0.0.1:${port}
  http-request set-var(txn.bearer) http_auth_bearer
  http-request set-var(txn.alg) var(txn.bearer),jwt_header_query('$.alg')
  http-request deny status 401 unless { var(txn.alg) -m str ES256 }
  http-request deny status 401 unless { var(txn.bearer),jwt_verify(txn.alg,"${publicKeyFile}") -m int 1 }
  http-request set-var(txn.now) date()
  http-request set-var(txn.exp) var(txn.bearer),jwt_payload_query('$.exp','int')
  http-request deny status 401 if { var(txn.exp),sub(txn.now) -m int lt 0 }
  http-request deny status 401 unless { var(txn.bearer),jwt_payload_query('$.iss') -m str ${BENCH_ISSUER} }
  http-request deny status 401 unless { var(txn.bearer),jwt_payload_query('$.aud') -m str ${BENCH_AUDIENCE} }
  default_backend upstream

backend upstream
  server up ${upstream.hostname}:${upstream.port} maxconn 128
`;
}

export async function startHaproxy(
  dir: string,
  upstream: string,
  key: BenchKey,
  path: string,
): Promise<Haproxy> {
  const version = ensureHaproxy();
  const port = await freePort();
  const file = join(dir, 'haproxy.cfg');
  await writeFile(file, haproxyConfig(port, new URL(upstream), key.publicKeyFile));
  const check = spawnSync('haproxy', ['-c', '-f', file], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`haproxy -c failed:\n${check.stdout}${check.stderr}`);
  const child: ChildProcess = spawn('haproxy', ['-db', '-f', file], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const peer: Haproxy = {
    url,
    pid: child.pid,
    version,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
  try {
    await waitForHttp(url + path);
    await proveItVerifies(url + path, dir, key);
  } catch (error) {
    await peer.stop();
    throw error;
  }
  return peer;
}

/** A valid token passes; each kind of bad token is refused. Throws otherwise. */
async function proveItVerifies(url: string, dir: string, key: BenchKey): Promise<void> {
  const otherKey = await createBenchKey(join(dir, 'haproxy-check-other-key'));
  const cases: [string, string | undefined, boolean][] = [
    ['a valid token', mintToken(key), true],
    ['no token', undefined, false],
    ['a token signed by another key', mintToken({ ...otherKey, kid: key.kid }), false],
    ['an expired token', mintToken(key, { expiresInS: -120 }), false],
    ['a wrong issuer', mintToken(key, { issuer: 'https://other.example' }), false],
    ['a wrong audience', mintToken(key, { audience: 'other-api' }), false],
  ];
  for (const [name, token, ok] of cases) {
    const res = await fetch(url, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
    await res.arrayBuffer();
    const refused = res.status === 401 || res.status === 403;
    if (ok ? res.status !== 200 : !refused) {
      throw new Error(
        `haproxy start-up check: ${name} got ${res.status} (expected ${ok ? '200' : '401/403'}): its jwt_verify is not working, refusing to measure it`,
      );
    }
  }
}
