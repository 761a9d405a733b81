/**
 * Micro-measurements behind the choice of Node's `crypto.verify`/`crypto.sign` over jose
 * and the verified-token cache's layout (bench/RESULTS.md, "Verification, signing and
 * cache memory"), two modes:
 *
 *   node dist-test/bench/verifyMicro.js [--ms 1500]
 *     one JWS signature check and one signature, jose (WebCrypto) against Node's
 *     synchronous `crypto.verify`/`crypto.sign` on a cached KeyObject, per algorithm, and
 *     the cost of hashing a token: CPU µs per operation (user + system, so the thread
 *     pool's work counts) and wall µs.
 *   node dist-test/bench/verifyMicro.js --cache-memory [--tokens 100000]
 *     a real gateway process (`verify.cacheSize` = --tokens, access log and metrics on)
 *     in front of the bench upstream; that many distinct tokens signed with the gateway's
 *     key are each sent once; the gateway's RSS (/proc) and heap (/metrics) before and
 *     after, and its cache size.
 *   node --expose-gc dist-test/bench/verifyMicro.js --cache-heap [--tokens 100000]
 *     the same fill in this process, straight through a TokenVerifier: heap octets per
 *     cached token, after full garbage collections (quick, for comparing representations).
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  constants as cryptoConstants,
  hash,
  type KeyObject,
  randomBytes,
  sign,
  verify,
  webcrypto,
} from 'node:crypto';
import { open as openFd, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { jwtVerify, SignJWT } from 'jose';
import { createApp } from '../src/app/createApp.js';
import { hashGeneratedSecret } from '../src/clients/secretHash.js';
import { validateConfig } from '../src/config/validateConfig.js';
import { generateSigningKey, writeSigningKey } from '../src/keys/generateKey.js';
import { KeyRing } from '../src/keys/keyRing.js';
import { ps256PrivateKey } from '../src/keys/rsaPssKey.js';
import { systemClock } from '../src/lib/clock.js';
import { outputDestination } from '../src/observability/logger.js';
import { MemoryRevocationStore } from '../src/revocation/memoryRevocationStore.js';
import { issueAccessToken } from '../src/token/issueAccessToken.js';
import { TokenVerifier } from '../src/verify/tokenVerifier.js';
import { buildIssuerTable } from '../src/verify/trustedIssuer.js';
import { VerifiedTokenCache } from '../src/verify/verifiedTokenCache.js';
import { newKeyPair } from '../test/helpers/keyPairs.js';
import { BENCH_CLIENT_SECRET } from './lib/benchClaims.js';
import { announce, onStop } from './lib/childProtocol.js';
import { spawnChild } from './lib/spawnChild.js';

const { values, positionals } = parseArgs({
  options: {
    ms: { type: 'string', default: '1500' },
    'cache-memory': { type: 'boolean', default: false },
    'cache-heap': { type: 'boolean', default: false },
    'miss-path': { type: 'boolean', default: false },
    tokens: { type: 'string', default: '100000' },
    'gateway-child': { type: 'string' },
    profile: { type: 'string' },
  },
  allowPositionals: true,
});

type Alg = 'ES256' | 'ES384' | 'EdDSA' | 'RS256' | 'PS256';
const DIGEST: Record<Alg, string | null> = {
  ES256: 'sha256',
  ES384: 'sha384',
  EdDSA: null,
  RS256: 'sha256',
  PS256: 'sha256',
};
const WEBCRYPTO: Record<
  Alg,
  webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams | webcrypto.Algorithm
> = {
  ES256: { name: 'ECDSA', namedCurve: 'P-256' },
  ES384: { name: 'ECDSA', namedCurve: 'P-384' },
  EdDSA: { name: 'Ed25519' },
  RS256: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
  PS256: { name: 'RSA-PSS', hash: 'SHA-256' },
};

function keysFor(alg: Alg): { privateKey: KeyObject; publicKey: KeyObject } {
  if (alg === 'ES256') return newKeyPair('ec', { namedCurve: 'P-256' });
  if (alg === 'ES384') return newKeyPair('ec', { namedCurve: 'P-384' });
  if (alg === 'EdDSA') return newKeyPair('ed25519');
  return newKeyPair('rsa', { modulusLength: 2048 });
}

function nodeOptions(alg: Alg, key: KeyObject) {
  if (alg === 'ES256' || alg === 'ES384') return { key, dsaEncoding: 'ieee-p1363' as const };
  if (alg === 'PS256') {
    return {
      key,
      padding: cryptoConstants.RSA_PKCS1_PSS_PADDING,
      saltLength: cryptoConstants.RSA_PSS_SALTLEN_DIGEST,
    };
  }
  return { key };
}

function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** Runs `op` for `ms` milliseconds (`concurrent` at a time); CPU and wall µs per operation. */
async function time(name: string, ms: number, op: () => unknown, concurrent = 1): Promise<void> {
  const run = async (duration: number) => {
    const end = performance.now() + duration;
    let n = 0;
    while (performance.now() < end) {
      const batch: unknown[] = [];
      for (let i = 0; i < concurrent; i++) batch.push(op());
      if (batch[0] instanceof Promise) await Promise.all(batch);
      n += concurrent;
    }
    return n;
  };
  await run(ms / 4);
  const c0 = cpuUs();
  const t0 = performance.now();
  const n = await run(ms);
  const wall = ((performance.now() - t0) * 1000) / n;
  const cpu = (cpuUs() - c0) / n;
  console.log(
    `${name.padEnd(44)} cpu ${cpu.toFixed(1).padStart(7)} µs/op  wall ${wall.toFixed(1).padStart(7)} µs/op`,
  );
}

async function microOps(ms: number): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  const claims = { client_id: 'bench-client', scope: 'orders:read orders:write' };
  for (const alg of ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256'] as const) {
    const { privateKey, publicKey } = keysFor(alg);
    const jwt = () =>
      new SignJWT(claims)
        .setProtectedHeader({ alg, kid: '20261126T000000Z-0123abcd', typ: 'at+jwt' })
        .setIssuer('https://portaria.bench')
        .setSubject('bench-client')
        .setAudience('bench-api')
        .setIssuedAt(now)
        .setNotBefore(now)
        .setExpirationTime(now + 3600)
        .setJti('AAAAAAAAAAAAAAAAAAAAAA');
    const token = await jwt().sign(privateKey);
    const dot = token.lastIndexOf('.');
    const options = { issuer: 'https://portaria.bench', audience: 'bench-api', typ: 'at+jwt' };
    const cryptoKey = await webcrypto.subtle.importKey(
      'spki',
      publicKey.export({ format: 'der', type: 'spki' }),
      WEBCRYPTO[alg],
      true,
      ['verify'],
    );
    await time(`${alg} jose jwtVerify (KeyObject)`, ms, () => jwtVerify(token, publicKey, options));
    await time(`${alg} jose jwtVerify (CryptoKey)`, ms, () => jwtVerify(token, cryptoKey, options));
    await time(
      `${alg} jose jwtVerify, 64 in flight`,
      ms,
      () => jwtVerify(token, publicKey, options),
      64,
    );
    const verifyOptions = nodeOptions(alg, publicKey);
    await time(`${alg} crypto.verify (sync)`, ms, () => {
      const signature = Buffer.from(token.slice(dot + 1), 'base64url');
      const data = Buffer.from(token.slice(0, dot), 'latin1');
      if (!verify(DIGEST[alg], data, verifyOptions, signature)) throw new Error('bad signature');
    });
    await time(`${alg} jose SignJWT`, ms, () => jwt().sign(privateKey));
    const signOptions = nodeOptions(alg, privateKey);
    const data = Buffer.from(token.slice(0, dot), 'latin1');
    await time(`${alg} crypto.sign (sync)`, ms, () =>
      sign(DIGEST[alg], data, signOptions).toString('base64url'),
    );
    if (alg === 'ES256') {
      await time('sha256 of a token, crypto.hash', ms, () => hash('sha256', token, 'base64'));
      await time('sha256 of a token, createHash', ms, () =>
        createHash('sha256').update(token).digest('base64'),
      );
    }
  }
  await ps256Ops(ms);
}

/**
 * PS256 as our own keys do it (an RSASSA-PSS key restricted to PS256, `keys/rsaPssKey.ts`:
 * the bare KeyObject, no options object) beside a plain RSA key with the PSS options (how
 * an issuer's PS256 key verifies), at 2048 and 3072 bits (`keys generate`'s size). The
 * gap between the two is what Node 24 charges an options object; on Node 20 it is small.
 */
async function ps256Ops(ms: number): Promise<void> {
  const input = Buffer.from(`${'h'.repeat(60)}.${'p'.repeat(320)}`, 'latin1');
  const options = {
    padding: cryptoConstants.RSA_PKCS1_PSS_PADDING,
    saltLength: cryptoConstants.RSA_PSS_SALTLEN_DIGEST,
  };
  for (const bits of [2048, 3072]) {
    const rsa = newKeyPair('rsa', { modulusLength: bits });
    const ours = ps256PrivateKey(rsa.privateKey);
    const oursPublic = createPublicKey(ours);
    const signature = sign('sha256', input, ours);
    await time(`PS256 ${bits} crypto.verify, our key (bare)`, ms, () => {
      if (!verify('sha256', input, oursPublic, signature)) throw new Error('bad signature');
    });
    await time(`PS256 ${bits} crypto.verify, RSA key + options`, ms, () => {
      if (!verify('sha256', input, { key: rsa.publicKey, ...options }, signature)) {
        throw new Error('bad signature');
      }
    });
    await time(`PS256 ${bits} crypto.sign, our key (bare)`, ms, () => sign('sha256', input, ours));
    await time(`PS256 ${bits} crypto.sign, RSA key + options`, ms, () =>
      sign('sha256', input, { key: rsa.privateKey, ...options }),
    );
  }
}

/** The gateway under measurement: `createApp` as bench/gateway.ts builds it, with a cache size. */
async function gatewayChild(upstream: string, cacheSize: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-cachemem-'));
  const keysDir = join(dir, 'keys');
  await writeSigningKey(keysDir, await generateSigningKey('ES256', new Date()));
  const clientsFile = join(dir, 'clients.json');
  await writeFile(
    clientsFile,
    JSON.stringify({
      clients: [
        {
          id: 'bench',
          secrets: [{ hash: hashGeneratedSecret(BENCH_CLIENT_SECRET) }],
          scopes: ['orders:read'],
        },
      ],
    }),
  );
  const config = validateConfig(
    {
      server: { host: '127.0.0.1', port: 0, shutdownGraceMs: 1000 },
      admin: { host: '127.0.0.1', port: 0 },
      issuer: 'https://portaria.bench',
      audience: 'bench-api',
      keys: { dir: keysDir },
      clients: { file: clientsFile },
      upstream: { default: { upstream, scopes: ['orders:read'] } },
      verify: { cacheSize },
      // Off, as the bench's token-operation comparison runs it: a bare server has none.
      tokenLimits: {
        perAddress: { enabled: false },
        perClient: { enabled: false },
        failedSecretBackoff: { enabled: false },
      },
      log: { level: 'info' },
    },
    { baseDir: dir },
  );
  const logFd = await promisify(openFd)('/dev/null', 'a');
  const app = await createApp({ config, logDestination: outputDestination(logFd) });
  const { publicUrl, adminUrl } = await app.listen();
  announce({ url: publicUrl, adminUrl, keysDir });
  // `--profile FILE`: a CPU profile from SIGUSR2 to the stop, start-up left out.
  const session = values.profile === undefined ? null : new Session();
  if (session !== null) {
    session.connect();
    process.once('SIGUSR2', () => {
      void session.post('Profiler.enable').then(() => session.post('Profiler.start'));
    });
  }
  onStop(async () => {
    if (session !== null && values.profile !== undefined) {
      const { profile } = await session.post('Profiler.stop');
      await writeFile(values.profile, JSON.stringify(profile));
    }
    await app.shutdown();
    await rm(dir, { recursive: true, force: true });
    return undefined;
  });
}

function rssMiB(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024;
}

async function metric(adminUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return Number(line?.split(' ').at(-1));
}

async function cacheMemory(count: number): Promise<void> {
  const upstream = await spawnChild<{ url: string }>(
    'upstream',
    new URL('./upstream.js', import.meta.url),
    [],
  );
  const gateway = await spawnChild<{ url: string; adminUrl: string; keysDir: string }>(
    'gateway',
    new URL(import.meta.url),
    ['--gateway-child', String(count), upstream.info.url],
  );
  try {
    const { url, adminUrl, keysDir } = gateway.info;
    const file = (await readdir(keysDir)).find((name) => name.endsWith('.pem')) as string;
    const key = createPrivateKey(readFileSync(join(keysDir, file)));
    const kid = file.slice(0, -'.pem'.length);
    const header = Buffer.from(JSON.stringify({ alg: 'ES256', kid, typ: 'at+jwt' })).toString(
      'base64url',
    );
    const now = Math.floor(Date.now() / 1000);
    const tokenAt = (i: number) => {
      const payload = Buffer.from(
        JSON.stringify({
          client_id: 'bench',
          scope: 'orders:read',
          iss: 'https://portaria.bench',
          sub: 'bench',
          aud: 'bench-api',
          iat: now,
          nbf: now,
          exp: now + 3600,
          jti: randomBytes(16).toString('base64url') + (i % 10),
        }),
      ).toString('base64url');
      const input = `${header}.${payload}`;
      const signature = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
      return `${input}.${signature.toString('base64url')}`;
    };
    const target = `${url}/v1/orders/42`;
    const send = async (token: string) => {
      const res = await fetch(target, { headers: { authorization: `Bearer ${token}` } });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`gateway answered ${res.status}`);
    };
    for (let i = 0; i < 200; i++) await send(tokenAt(i));
    const before = {
      rss: rssMiB(gateway.pid),
      heap: await metric(adminUrl, 'portaria_nodejs_heap_size_used_bytes'),
    };
    let next = 0;
    const started = performance.now();
    const worker = async () => {
      while (next < count) {
        next++;
        await send(tokenAt(next));
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    const seconds = (performance.now() - started) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const after = {
      rss: rssMiB(gateway.pid),
      heap: await metric(adminUrl, 'portaria_nodejs_heap_size_used_bytes'),
    };
    console.log(
      JSON.stringify({
        tokens: count,
        fillSeconds: Number(seconds.toFixed(1)),
        rssMiBBefore: Number(before.rss.toFixed(1)),
        rssMiBAfter: Number(after.rss.toFixed(1)),
        heapMiBBefore: Number((before.heap / 2 ** 20).toFixed(1)),
        heapMiBAfter: Number((after.heap / 2 ** 20).toFixed(1)),
        heapBytesPerToken: Math.round((after.heap - before.heap) / count),
      }),
    );
  } finally {
    await gateway.stop();
    await upstream.stop();
  }
}

/** Heap octets per cached token, filled through a real TokenVerifier (our ES256 key). */
async function cacheHeap(count: number): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc');
  const ring = new KeyRing(
    [{ kid: '20261126T000000Z-0123abcd', alg: 'ES256', privateKey: keysFor('ES256').privateKey }],
    new Map(),
    'ES256',
    systemClock,
  );
  const settings = { issuer: 'https://portaria.bench', audience: 'bench-api', clock: systemClock };
  const cache = new VerifiedTokenCache(count, systemClock);
  const verifier = new TokenVerifier({
    issuers: buildIssuerTable({ ...settings, clockSkewSeconds: 60 }, () => ring, []),
    clock: systemClock,
    cache,
    revocation: new MemoryRevocationStore(systemClock),
  });
  const input = { clientId: 'bench', scope: 'orders:read', lifetimeSeconds: 3600 };
  // Warm every code path before the baseline.
  await verifier.verify((await issueAccessToken(ring.signingKey, settings, input)).token);
  cache.clear();
  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < count; i++) {
    // Header value strings as Node's parser hands them over: a new string per request.
    const { token } = await issueAccessToken(ring.signingKey, settings, input);
    await verifier.verify(`Bearer ${token}`.slice(7));
  }
  gc();
  gc();
  const after = process.memoryUsage().heapUsed;
  console.log(
    JSON.stringify({
      tokens: cache.size,
      heapBytesPerToken: Math.round((after - before) / count),
      rssMiB: Number((process.memoryUsage().rss / 2 ** 20).toFixed(1)),
    }),
  );
}

/**
 * The verifier's miss path in this process: `--tokens` distinct tokens (default 1,000
 * here) cycled through a TokenVerifier with a one-entry cache, against the bare
 * `crypto.verify` of the same tokens: the difference is the verifier's own cost.
 */
async function missPath(count: number, ms: number): Promise<void> {
  const ring = new KeyRing(
    [{ kid: '20261126T000000Z-0123abcd', alg: 'ES256', privateKey: keysFor('ES256').privateKey }],
    new Map(),
    'ES256',
    systemClock,
  );
  const settings = { issuer: 'https://portaria.bench', audience: 'bench-api', clock: systemClock };
  const verifier = new TokenVerifier({
    issuers: buildIssuerTable({ ...settings, clockSkewSeconds: 60 }, () => ring, []),
    clock: systemClock,
    cache: new VerifiedTokenCache(1, systemClock),
    revocation: new MemoryRevocationStore(systemClock),
  });
  const input = { clientId: 'bench', scope: 'orders:read', lifetimeSeconds: 3600 };
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    tokens.push((await issueAccessToken(ring.signingKey, settings, input)).token);
  }
  const key = ring.verificationKey('20261126T000000Z-0123abcd')?.key as KeyObject;
  const options = { key, dsaEncoding: 'ieee-p1363' as const };
  const { ecdsaDerSignature } = await import('../src/keys/ecdsaDer.js');
  let i = 0;
  const next = () => {
    i = (i + 1) % count;
    // Header value strings as Node's parser hands them over: a new string per request.
    return `Bearer ${tokens[i]}`.slice(7);
  };
  for (let round = 0; round < 3; round++) {
    await time('crypto.verify, bare KeyObject, DER', ms, () => {
      const token = next();
      const dot = token.lastIndexOf('.');
      const signature = Buffer.from(token.slice(dot + 1), 'base64url');
      const der = ecdsaDerSignature(signature, 32) as Buffer;
      const data = Buffer.from(token.slice(0, dot), 'latin1');
      if (!verify('sha256', data, key, der)) throw new Error('bad signature');
    });
    await time('crypto.verify, options object, r‖s', ms, () => {
      const token = next();
      const dot = token.lastIndexOf('.');
      const signature = Buffer.from(token.slice(dot + 1), 'base64url');
      const data = Buffer.from(token.slice(0, dot), 'latin1');
      if (!verify('sha256', data, options, signature)) throw new Error('bad signature');
    });
    await time('TokenVerifier.verify, cache of 1 (miss)', ms, () => verifier.verify(next()));
    await time('TokenVerifier.verify, 64 in flight', ms, () => verifier.verify(next()), 64);
  }
}

if (values['gateway-child'] !== undefined) {
  await gatewayChild(positionals[0] as string, Number(values['gateway-child']));
} else if (values['cache-heap']) {
  await cacheHeap(Number(values.tokens));
} else if (values['miss-path']) {
  await missPath(values.tokens === '100000' ? 1000 : Number(values.tokens), Number(values.ms));
} else if (values['cache-memory']) {
  await cacheMemory(Number(values.tokens));
} else {
  await microOps(Number(values.ms));
}
