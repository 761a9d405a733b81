/**
 * Mode `dpop`: what a DPoP proof (RFC 9449 §7.1) costs on the cached path, and what the
 * shared replay store adds. Two gateways with `dpop.enabled`, both pinned to one CPU
 * (only one is loaded at a time), two routes each to the same upstream:
 *
 *   bearer       `/v1/bearer/…` with a plain bearer token (the verified-token cache path)
 *   dpop         `/v1/dpop/…` (`requireSenderConstrained`) with a DPoP-bound token from
 *                the token operation, and a fresh proof per request: one signature check,
 *                the `htm`/`htu`/`iat`/`ath` checks and one `jti` claim in the replay store
 *   dpop-redis   the same on the second gateway, whose replay store is a real
 *                `redis-server` on a loopback port (`oauth.replayStore: redis`)
 *
 * The load is an undici pool per gateway in this process, `--connections` lanes of one
 * request in flight each, on the other CPU with the upstream, the log sinks and Redis,
 * in phases whose order rotates every round; the gateways' CPU per request is read from
 * /proc for each phase. Every proof is unique (its `jti`) and made for the phase's URL and
 * token: a batch of proofs (`iat` now; `--alg` ES256, PS256 with a 2048-bit key, or
 * EdDSA) is signed just before each phase starts, so the signing is off the measured
 * path; a proof still valid when used needs the phase to end within `--window` seconds
 * (`dpop.proofWindowSeconds`) of the start of its batch, and a lane that
 * runs out of the batch signs its own (counted, reported). The window is 60 s, not 300:
 * the local replay store keeps each `jti` for twice the window in at most 100,000 entries
 * and refuses new proofs (503) when full, which a 300 s window reaches within the run.
 *
 * Before the load, in this process: what Node itself does per proof — one
 * `crypto.verify` of `--alg` on a cached key object, and one `checkDpopProof` (the whole proof
 * check, without the replay store) — so the gateway's extra CPU per DPoP request can be
 * split into the signature, the rest of the check, and the step and replay store around.
 * Targets: dpop ≥ 0.5 × bearer in req/s (one signature check per request).
 *
 *   npm run bench -- --mode dpop [--rounds 6] [--duration 5] [--warmup 3] [--connections 16]
 *     [--window 60] [--alg ES256|PS256|EdDSA] [--cpu-prof-dir DIR]
 *
 * Needs redis-server, taskset and 2 CPUs.
 */
import { spawnSync } from 'node:child_process';
import {
  constants,
  type KeyObject,
  randomBytes,
  sign,
  verify as verifySignature,
} from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { accessTokenHash, checkDpopProof, DPOP_ALGORITHMS } from '../../src/verify/dpopProof.js';
import { newKeyPair } from '../../test/helpers/keyPairs.js';
import { BENCH_CLIENT_ID, BENCH_CLIENT_SECRET, TOKEN_PATH } from '../lib/benchClaims.js';
import { startBenchRedis } from '../lib/benchRedis.js';
import { closedLoad, type LoadDone } from '../lib/closedLoad.js';
import { pinTo } from '../lib/cpuPinning.js';
import { ChildSet, startGateway, startUpstream } from '../lib/gateways.js';
import { fail, parseModeArgs, positiveInt } from '../lib/modeArgs.js';
import { processCpuUs } from '../lib/processCpu.js';
import { median } from '../lib/stats.js';

const OPTIONS = {
  rounds: { type: 'string', default: '6' },
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '3' },
  connections: { type: 'string', default: '16' },
  window: { type: 'string', default: '60' },
  // The proofs' algorithm (the clients' key type): ES256, PS256 or EdDSA.
  alg: { type: 'string', default: 'ES256' },
  // A directory: the local-store gateway writes a V8 CPU profile there when it stops.
  'cpu-prof-dir': { type: 'string' },
} as const;

/** The proof algorithms the mode can sign with: the common three of RFC 9449 clients. */
const PROOF_ALGORITHMS = ['ES256', 'PS256', 'EdDSA'] as const;
type ProofAlgorithm = (typeof PROOF_ALGORITHMS)[number];

/** How each signs and verifies with Node (RFC 7518 §3.4–3.5, RFC 8037 §3.1). */
const SIGNING: Record<
  ProofAlgorithm,
  { pair: () => ReturnType<typeof newKeyPair>; digest: string | null; options: object }
> = {
  ES256: {
    pair: () => newKeyPair('ec', { namedCurve: 'P-256' }),
    digest: 'sha256',
    options: { dsaEncoding: 'ieee-p1363' },
  },
  PS256: {
    pair: () => newKeyPair('rsa', { modulusLength: 2048 }),
    digest: 'sha256',
    options: { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 },
  },
  EdDSA: { pair: () => newKeyPair('ed25519'), digest: null, options: {} },
};

/** One client key, signing proofs the way a client does (RFC 9449 §4.2). */
class ProofSigner {
  readonly #key: KeyObject;
  readonly publicKey: KeyObject;
  readonly alg: ProofAlgorithm;
  readonly #header: string;
  readonly #prefix = randomBytes(6).toString('base64url');
  #count = 0;

  constructor(alg: ProofAlgorithm) {
    const { privateKey, publicKey } = SIGNING[alg].pair();
    this.alg = alg;
    this.#key = privateKey;
    this.publicKey = publicKey;
    const jwk = publicKey.export({ format: 'jwk' });
    // One header for every proof, as a client library builds it.
    this.#header = part({ typ: 'dpop+jwt', alg, jwk });
  }

  proof(method: string, url: string, token?: string): string {
    this.#count += 1;
    const claims = {
      htm: method,
      htu: url,
      iat: Math.floor(Date.now() / 1000),
      jti: `${this.#prefix}-${this.#count}`,
      ...(token === undefined ? {} : { ath: accessTokenHash(token) }),
    };
    const input = `${this.#header}.${part(claims)}`;
    const { digest, options } = SIGNING[this.alg];
    const signature = sign(digest, Buffer.from(input), { key: this.#key, ...options });
    return `${input}.${signature.toString('base64url')}`;
  }
}

const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

interface Target {
  readonly name: 'bearer' | 'dpop' | 'dpop-redis';
  readonly pool: Pool;
  readonly pid: number | undefined;
  readonly path: string;
  readonly url: string;
  readonly token: string;
  readonly dpop: boolean;
}

interface Done extends LoadDone {
  /** Proofs signed during the phase (the batch ran out). */
  inline: number;
}

/** `connections` lanes of back-to-back GETs for `seconds`, each DPoP request with its own proof. */
async function load(
  target: Target,
  signer: ProofSigner,
  proofs: string[],
  seconds: number,
  connections: number,
): Promise<Done> {
  let next = 0;
  let inline = 0;
  const bearer = { authorization: `Bearer ${target.token}` };
  const headers = (): Record<string, string> => {
    if (!target.dpop) return bearer;
    let proof = proofs[next++];
    if (proof === undefined) {
      inline += 1;
      proof = signer.proof('GET', target.url, target.token);
    }
    return { authorization: `DPoP ${target.token}`, dpop: proof };
  };
  const done = await closedLoad(target.pool, target.path, headers, seconds, connections);
  return { ...done, inline };
}

/** A DPoP-bound token from the contract's token operation, with a proof for that POST (§5). */
async function dpopToken(pool: Pool, origin: string, signer: ProofSigner): Promise<string> {
  const issued = await pool.request({
    method: 'POST',
    path: TOKEN_PATH,
    headers: {
      'content-type': 'application/json',
      dpop: signer.proof('POST', origin + TOKEN_PATH),
    },
    body: JSON.stringify({ clientId: BENCH_CLIENT_ID, clientSecret: BENCH_CLIENT_SECRET }),
  });
  const body = (await issued.body.json()) as Record<string, unknown>;
  const token = body.token_de_acesso ?? body.accesstoken;
  const type = body.tipo_de_token ?? body.tokenType;
  if (issued.statusCode !== 200 || typeof token !== 'string' || type !== 'DPoP') {
    throw new Error(`the token operation gave no DPoP token: ${issued.statusCode}`);
  }
  return token;
}

/** Calls of `fn` for about `ms`: CPU µs (user + system, this process) and wall µs per call. */
async function perCall(ms: number, fn: () => unknown): Promise<{ cpuUs: number; wallUs: number }> {
  let calls = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  while (performance.now() - started < ms) {
    for (let i = 0; i < 50; i++) await fn();
    calls += 50;
  }
  const wall = (performance.now() - started) * 1000;
  const used = process.cpuUsage(cpu);
  return { cpuUs: (used.user + used.system) / calls, wallUs: wall / calls };
}

/** What Node does per proof on this CPU: one signature verify, one whole proof check. */
async function baselines(alg: ProofAlgorithm): Promise<string> {
  const signer = new ProofSigner(alg);
  const url = 'http://127.0.0.1:1/v1/dpop/42';
  const token = 'bench.token.value';
  const sample = signer.proof('GET', url, token);
  const [header, payload, signature] = sample.split('.') as [string, string, string];
  const input = Buffer.from(`${header}.${payload}`);
  const sig = Buffer.from(signature, 'base64url');
  const { digest, options } = SIGNING[alg];
  const key = { key: signer.publicKey, ...options };
  if (!verifySignature(digest, input, key, sig)) throw new Error('baseline: verify failed');
  const verify = await perCall(1000, () => verifySignature(digest, input, key, sig));
  const proofs = Array.from({ length: 20_000 }, () => signer.proof('GET', url, token));
  let i = 0;
  const expect = {
    method: 'GET',
    url,
    now: Math.floor(Date.now() / 1000),
    windowSeconds: 300,
    algorithms: DPOP_ALGORITHMS,
    accessToken: token,
  };
  const check = await perCall(1000, () =>
    checkDpopProof(proofs[i++ % proofs.length] as string, expect),
  );
  return (
    `Node on this CPU, one ${alg} crypto.verify (cached KeyObject): ${verify.cpuUs.toFixed(1)} µs CPU ` +
    `(${(1e6 / verify.wallUs).toFixed(0)}/s); one checkDpopProof (same key, no replay store): ` +
    `${check.cpuUs.toFixed(1)} µs CPU, ${check.wallUs.toFixed(1)} µs wall`
  );
}

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, OPTIONS);
  const rounds = positiveInt(values, 'rounds');
  const durationS = positiveInt(values, 'duration');
  const warmupS = positiveInt(values, 'warmup');
  const connections = positiveInt(values, 'connections');
  const windowS = positiveInt(values, 'window');
  const profileDir = values['cpu-prof-dir'];
  if (windowS < 5 || windowS > 300) fail('--window: dpop.proofWindowSeconds is 5..300');
  if (durationS + 5 > windowS) fail('--window: a phase and its batch must fit in the window');
  const alg = values.alg as ProofAlgorithm;
  if (!PROOF_ALGORITHMS.includes(alg)) fail(`--alg: one of ${PROOF_ALGORITHMS.join(', ')}`);
  if (availableParallelism() < 2 || spawnSync('taskset', ['-V']).status !== 0) {
    process.stderr.write('the dpop mode needs 2 CPUs and taskset (util-linux)\n');
    return 2;
  }
  // This process first: every child (Redis too) inherits its CPUs; the gateways then move.
  const last = availableParallelism() - 1;
  pinTo(last === 1 ? '0' : `0-${last - 1}`, process.pid);
  process.stdout.write(`${await baselines(alg)}\n`);

  const work = await mkdtemp(join(tmpdir(), 'portaria-dpop-bench-'));
  const children = new ChildSet();
  const pools: Pool[] = [];
  let redis: Awaited<ReturnType<typeof startBenchRedis>> | undefined;
  try {
    redis = await startBenchRedis();
    const upstream = await startUpstream(children);
    const settings = (more: Record<string, unknown>) => ({
      dpop: { enabled: true, proofWindowSeconds: windowS },
      routes: [
        { id: 'bearer', prefix: '/v1/bearer', upstream: upstream.info.url },
        {
          id: 'dpop',
          prefix: '/v1/dpop',
          upstream: upstream.info.url,
          requireSenderConstrained: true,
        },
      ],
      ...more,
    });
    const local = await startGateway(children, {
      name: 'gateway-local',
      dir: join(work, 'local'),
      upstream: upstream.info.url,
      overrides: settings({ oauth: { replayStore: 'local' } }),
      ...(profileDir === undefined
        ? {}
        : { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] }),
    });
    const shared = await startGateway(children, {
      name: 'gateway-redis',
      dir: join(work, 'redis'),
      upstream: upstream.info.url,
      overrides: settings({
        oauth: { replayStore: 'redis' },
        redis: { url: redis.server.url },
      }),
    });
    pinTo(String(last), local.pid, shared.pid);

    const signer = new ProofSigner(alg);
    const poolOf = (url: string) => {
      const pool = new Pool(url, { connections });
      pools.push(pool);
      return pool;
    };
    const localPool = poolOf(local.info.url);
    const sharedPool = poolOf(shared.info.url);
    const targets: readonly Target[] = [
      {
        name: 'bearer',
        pool: localPool,
        pid: local.pid,
        path: '/v1/bearer/42',
        url: `${local.info.url}/v1/bearer/42`,
        token: local.info.token,
        dpop: false,
      },
      {
        name: 'dpop',
        pool: localPool,
        pid: local.pid,
        path: '/v1/dpop/42',
        url: `${local.info.url}/v1/dpop/42`,
        token: await dpopToken(localPool, local.info.url, signer),
        dpop: true,
      },
      {
        name: 'dpop-redis',
        pool: sharedPool,
        pid: shared.pid,
        path: '/v1/dpop/42',
        url: `${shared.info.url}/v1/dpop/42`,
        token: await dpopToken(sharedPool, shared.info.url, signer),
        dpop: true,
      },
    ];
    // Signed in slices, yielding between them: a long batch (PS256 signs in ~0.5 ms) must
    // not block the pools' event loop past the gateway's keep-alive timeout, or a lane
    // writes to a socket whose close was never read.
    const batch = async (target: Target, count: number): Promise<string[]> => {
      const proofs: string[] = [];
      while (target.dpop && proofs.length < count) {
        const slice = Math.min(count, proofs.length + 200);
        while (proofs.length < slice) proofs.push(signer.proof('GET', target.url, target.token));
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      return proofs;
    };

    // Each route takes its token and refuses the wrong use: a replayed proof, a bearer
    // token on the sender-constrained route.
    for (const target of targets) {
      const check = await load(target, signer, await batch(target, 20), 0.2, 1);
      if (check.failures > 0 || check.requests === 0) {
        throw new Error(`${target.name}: the gateway refused the bench's token or proof`);
      }
      if (target.dpop) {
        const once = await batch(target, 1);
        const replay = await load(target, signer, [...once, ...once], 0.05, 1);
        if (replay.requests < 1 || replay.statuses.get(401) !== 1) {
          throw new Error(`${target.name}: a replayed proof was not refused once`);
        }
        const token = target.pool === localPool ? local.info.token : shared.info.token;
        const bearer = { ...target, dpop: false, token };
        if ((await load(bearer, signer, [], 0.05, 1)).requests > 0) {
          throw new Error(`${target.name}: the sender-constrained route took a bearer token`);
        }
      }
    }

    // A batch covers the fastest DPoP phase seen so far, with room; the warm-up sizes it.
    let fastest = 1000;
    process.stdout.write(`warm-up ${warmupS} s each\n`);
    for (const target of targets) {
      const proofs = await batch(target, 5000 * warmupS);
      const started = performance.now();
      const done = await load(target, signer, proofs, warmupS, connections);
      if (target.dpop) {
        fastest = Math.max(fastest, done.requests / ((performance.now() - started) / 1000));
      }
    }
    const names = targets.map((t) => t.name);
    const perRound: Record<string, { rate: number; us: number }>[] = [];
    let failures = 0;
    let inline = 0;
    for (let r = 0; r < rounds; r++) {
      const order = targets.map((_, i) => targets[(i + r) % targets.length] as Target);
      const seen: Record<string, { rate: number; us: number }> = {};
      for (const target of order) {
        const signing = performance.now();
        const proofs = await batch(target, Math.ceil(fastest * durationS * 1.5) + 500);
        // Every proof's iat is its signing time: the last request must come within the window.
        const signedS = (performance.now() - signing) / 1000;
        if (signedS + durationS + 2 > windowS) {
          fail(
            `--window: signing a batch took ${signedS.toFixed(0)} s; raise --window or lower --duration`,
          );
        }
        const before = processCpuUs(target.pid);
        const started = performance.now();
        const done = await load(target, signer, proofs, durationS, connections);
        const seconds = (performance.now() - started) / 1000;
        const us = (processCpuUs(target.pid) - before) / done.requests;
        seen[target.name] = { rate: done.requests / seconds, us };
        if (target.dpop) fastest = Math.max(fastest, done.requests / seconds);
        failures += done.failures;
        inline += done.inline;
        if (done.failures > 0) {
          process.stdout.write(
            `  ${target.name}: ${done.failures} failures (${[...done.statuses].map(([s, n]) => `${n}×${s}`).join(', ')})\n`,
          );
        }
      }
      perRound.push(seen);
      process.stdout.write(
        `round ${r + 1}: ${names
          .map((n) => {
            const s = seen[n] as { rate: number; us: number };
            return `${n} ${s.rate.toFixed(0)}/s ${s.us.toFixed(1)} µs`;
          })
          .join(
            ', ',
          )}; dpop/bearer ${ratio(seen, 'dpop', 'bearer').toFixed(3)}, redis/local ${ratio(seen, 'dpop-redis', 'dpop').toFixed(3)}\n`,
      );
    }
    const med = (fn: (s: Record<string, { rate: number; us: number }>) => number) =>
      median(perRound.map(fn));
    const at = (s: Record<string, { rate: number; us: number }>, n: string) =>
      s[n] as { rate: number; us: number };
    const dpopBearer = med((s) => ratio(s, 'dpop', 'bearer'));
    process.stdout.write(
      `\nmedians of ${rounds} rounds (${alg} proofs, gateway CPU per request from /proc, ${connections} connections):\n` +
        `  bearer      ${med((s) => at(s, 'bearer').rate).toFixed(0)}/s  ${med((s) => at(s, 'bearer').us).toFixed(1)} µs\n` +
        `  dpop        ${med((s) => at(s, 'dpop').rate).toFixed(0)}/s  ${med((s) => at(s, 'dpop').us).toFixed(1)} µs\n` +
        `  dpop-redis  ${med((s) => at(s, 'dpop-redis').rate).toFixed(0)}/s  ${med((s) => at(s, 'dpop-redis').us).toFixed(1)} µs\n` +
        `dpop / bearer = ${dpopBearer.toFixed(3)} × req/s, ${med((s) => at(s, 'dpop').us / at(s, 'bearer').us).toFixed(3)} × CPU per request ` +
        `(+${med((s) => at(s, 'dpop').us - at(s, 'bearer').us).toFixed(1)} µs; target ≥ 0.5 × req/s: ${dpopBearer >= 0.5 ? 'met' : 'not met'})\n` +
        `dpop-redis / dpop-local = ${med((s) => ratio(s, 'dpop-redis', 'dpop')).toFixed(3)} × req/s, ` +
        `${med((s) => at(s, 'dpop-redis').us / at(s, 'dpop').us).toFixed(3)} × CPU per request ` +
        `(+${med((s) => at(s, 'dpop-redis').us - at(s, 'dpop').us).toFixed(1)} µs)\n` +
        `proofs signed during the phases (batch ran out): ${inline}\n`,
    );
    if (failures > 0) {
      process.stdout.write(`${failures} requests failed: the figures above are not valid\n`);
      return 1;
    }
    return 0;
  } finally {
    for (const pool of pools) await pool.close();
    await children.stopAll();
    await redis?.stop();
    await rm(work, { recursive: true, force: true });
  }
}

function ratio(seen: Record<string, { rate: number }>, a: string, b: string): number {
  return (seen[a]?.rate ?? Number.NaN) / (seen[b]?.rate ?? Number.NaN);
}
