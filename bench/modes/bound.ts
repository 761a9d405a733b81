/**
 * Mode `bound`: what the certificate binding (RFC 8705 §3) costs on the cached path. One
 * gateway with TLS and client certificates (`request`), pinned to one CPU, two routes to
 * the same upstream:
 *
 *   bearer   `/v1/bearer/…` with a plain bearer token
 *   bound    `/v1/bound/…` (`requireCertificateBound`) with a token bound to the client's
 *            certificate: the binding step compares its `x5t#S256` with the connection's
 *
 * Both loads run over the same kept-alive mutual-TLS connections (an undici pool in this
 * process presenting the partner's certificate, on the other CPUs), in alternating
 * phases; the gateway's CPU per request is read from /proc for each. The thumbprint is
 * computed once per connection, so the target is bound / bearer ≥ 0.90.
 *
 *   npm run bench -- --mode bound [--rounds 6] [--duration 5] [--warmup 3] [--connections 16]
 *
 * Needs openssl, taskset and 2 CPUs.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { BENCH_CLIENT_ID, BENCH_CLIENT_SECRET, TOKEN_PATH } from '../lib/benchClaims.js';
import { pinTo } from '../lib/cpuPinning.js';
import { ChildSet, startGateway, startUpstream } from '../lib/gateways.js';
import { parseModeArgs, positiveInt } from '../lib/modeArgs.js';
import { processCpuUs } from '../lib/processCpu.js';
import { median } from '../lib/stats.js';

const OPTIONS = {
  rounds: { type: 'string', default: '6' },
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '3' },
  connections: { type: 'string', default: '16' },
} as const;

function openssl(cwd: string, args: readonly string[]): void {
  const made = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`openssl ${args[0]} failed: ${made.stderr}`);
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

/** A CA, a server certificate for 127.0.0.1 and a partner's client certificate it issued. */
async function certificates(dir: string) {
  openssl(dir, [
    'req',
    '-x509',
    ...EC,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-subj',
    '/CN=bench-ca',
    '-days',
    '2',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const issue = async (name: string, ext: string) => {
    await writeFile(join(dir, `${name}.ext`), `${ext}\n`);
    openssl(dir, [
      'req',
      '-new',
      ...EC,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=${name}`,
    ]);
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    ]);
  };
  await issue('server', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth');
  await issue('partner', 'extendedKeyUsage=clientAuth');
  const read = (file: string) => readFile(join(dir, file), 'utf8');
  return {
    caFile: join(dir, 'ca.crt'),
    certFile: join(dir, 'server.crt'),
    keyFile: join(dir, 'server.key'),
    ca: await read('ca.crt'),
    partnerCert: await read('partner.crt'),
    partnerKey: await read('partner.key'),
  };
}

/** `connections` lanes of back-to-back GETs of `path` for `seconds`; requests done. */
async function load(
  pool: Pool,
  path: string,
  token: string,
  seconds: number,
  connections: number,
): Promise<{ requests: number; failures: number }> {
  const deadline = performance.now() + seconds * 1000;
  let requests = 0;
  let failures = 0;
  const lane = async () => {
    while (performance.now() < deadline) {
      const res = await pool.request({
        method: 'GET',
        path,
        headers: { authorization: `Bearer ${token}` },
      });
      await res.body.dump();
      if (res.statusCode === 200) requests++;
      else failures++;
    }
  };
  await Promise.all(Array.from({ length: connections }, lane));
  return { requests, failures };
}

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, OPTIONS);
  const rounds = positiveInt(values, 'rounds');
  const durationS = positiveInt(values, 'duration');
  const warmupS = positiveInt(values, 'warmup');
  const connections = positiveInt(values, 'connections');
  if (availableParallelism() < 2 || spawnSync('taskset', ['-V']).status !== 0) {
    process.stderr.write('the bound mode needs 2 CPUs and taskset (util-linux)\n');
    return 2;
  }
  const work = await mkdtemp(join(tmpdir(), 'portaria-bound-bench-'));
  const children = new ChildSet();
  let pool: Pool | undefined;
  try {
    const pki = await certificates(work);
    const upstream = await startUpstream(children);
    const gateway = await startGateway(children, {
      name: 'gateway',
      dir: join(work, 'gateway'),
      upstream: upstream.info.url,
      overrides: {
        server: {
          tls: {
            enabled: true,
            certFile: pki.certFile,
            keyFile: pki.keyFile,
            clientCertificates: 'request',
          },
        },
        clientCertificate: { source: 'tls', caFiles: [pki.caFile] },
        routes: [
          { id: 'bearer', prefix: '/v1/bearer', upstream: upstream.info.url },
          {
            id: 'bound',
            prefix: '/v1/bound',
            upstream: upstream.info.url,
            requireCertificateBound: true,
          },
        ],
      },
    });
    const last = availableParallelism() - 1;
    const others = children.pids().filter((pid) => pid !== gateway.pid);
    pinTo(last === 1 ? '0' : `0-${last - 1}`, process.pid, ...others);
    pinTo(String(last), gateway.pid);

    pool = new Pool(gateway.info.url, {
      connections,
      connect: { ca: pki.ca, cert: pki.partnerCert, key: pki.partnerKey },
    });
    // The gateway's own token came without a certificate: a bearer token. This one, over
    // the partner's connection, is bound to its certificate.
    const issued = await pool.request({
      method: 'POST',
      path: TOKEN_PATH,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: BENCH_CLIENT_ID, clientSecret: BENCH_CLIENT_SECRET }),
    });
    const body = (await issued.body.json()) as Record<string, unknown>;
    const bound = (body.token_de_acesso ?? body.accesstoken) as string;
    const bearer = gateway.info.token;
    for (const [path, token] of [
      ['/v1/bound/42', bound],
      ['/v1/bearer/42', bearer],
    ] as const) {
      const check = await load(pool, path, token, 0.2, 1);
      if (check.failures > 0 || check.requests === 0) {
        throw new Error(`${path}: the gateway refused the bench's token`);
      }
    }
    const refused = await load(pool, '/v1/bound/42', bearer, 0.2, 1);
    if (refused.requests > 0) throw new Error('/v1/bound took a bearer token');

    process.stdout.write(`warm-up ${warmupS} s\n`);
    await load(pool, '/v1/bearer/42', bearer, warmupS, connections);
    await load(pool, '/v1/bound/42', bound, warmupS, connections);
    const rateRatios: number[] = [];
    const cpuRatios: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const phases = r % 2 === 0 ? (['bearer', 'bound'] as const) : (['bound', 'bearer'] as const);
      const seen: Record<string, { rate: number; us: number }> = {};
      for (const phase of phases) {
        const before = processCpuUs(gateway.pid);
        const started = performance.now();
        const done = await load(
          pool,
          `/v1/${phase}/42`,
          phase === 'bound' ? bound : bearer,
          durationS,
          connections,
        );
        const seconds = (performance.now() - started) / 1000;
        const us = (processCpuUs(gateway.pid) - before) / done.requests;
        seen[phase] = { rate: done.requests / seconds, us };
        if (done.failures > 0) process.stdout.write(`  ${phase}: ${done.failures} failures!\n`);
      }
      const bearerRun = seen.bearer as { rate: number; us: number };
      const boundRun = seen.bound as { rate: number; us: number };
      rateRatios.push(boundRun.rate / bearerRun.rate);
      cpuRatios.push(bearerRun.us / boundRun.us);
      process.stdout.write(
        `round ${r + 1}: bearer ${bearerRun.rate.toFixed(0)}/s ${bearerRun.us.toFixed(1)} µs CPU/request, ` +
          `bound ${boundRun.rate.toFixed(0)}/s ${boundRun.us.toFixed(1)} µs; bound/bearer ${(boundRun.rate / bearerRun.rate).toFixed(3)}\n`,
      );
    }
    process.stdout.write(
      `\nbound / bearer = ${median(rateRatios).toFixed(3)} × req/s, bearer / bound = ${median(cpuRatios).toFixed(3)} × gateway CPU per request (medians of ${rounds} rounds, same mutual-TLS connections, target ≥ 0.90)\n`,
    );
    return 0;
  } finally {
    await pool?.close();
    await children.stopAll();
    await rm(work, { recursive: true, force: true });
  }
}
