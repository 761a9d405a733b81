/**
 * Mode `verify`: what a verified request costs, with the cache helping and defeated.
 *
 * Rows, interleaved in rounds: the bare undici passthrough (baseline); the gateway with
 * one token (verified-token cache hits); HAProxy's `jwt_verify` (the C peer, one thread,
 * verifies every request); the gateway with `verify.cacheSize: 1` and a different token
 * on every request (wrk cycling through `--tokens` pre-issued tokens); a bare undici +
 * jose `jwtVerify` server on the same tokens. Every gateway logs and counts as in
 * production. Verdicts: cached / baseline ≥ 0.90; uncached / HAProxy ≥ 1 in requests/s
 * and ≤ 1 in CPU per request.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBenchKey, mintTokenFile } from '../lib/benchKey.js';
import { type CompareTarget, resultTable, runInterleaved, verdict } from '../lib/comparison.js';
import {
  benchChild,
  ChildSet,
  cacheLookups,
  expectOk,
  type ServerInfo,
  startBaseline,
  startGateway,
  startUpstream,
} from '../lib/gateways.js';
import {
  header,
  parseModeArgs,
  positiveInt,
  requireWrk,
  TIMING_OPTIONS,
  timingOf,
} from '../lib/modeArgs.js';
import { spawnChild } from '../lib/spawnChild.js';
import { writeWrkScripts } from '../lib/wrkScripts.js';
import { type Haproxy, startHaproxy } from '../peers/haproxy.js';

const PATH = '/v1/orders/42';
const log = (text: string) => process.stdout.write(`${text}\n`);

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, {
    ...TIMING_OPTIONS,
    tokens: { type: 'string', default: '1000' },
    'skip-haproxy': { type: 'boolean', default: false },
  });
  const timing = timingOf(values);
  const tokenCount = positiveInt(values, 'tokens');
  const wrk = requireWrk();
  const dir = await mkdtemp(join(tmpdir(), 'portaria-bench-verify-'));
  const children = new ChildSet();
  let haproxy: Haproxy | null = null;
  try {
    const key = await createBenchKey(dir);
    const tokensFile = join(dir, 'tokens.txt');
    const tokens = await mintTokenFile(key, Math.max(2, tokenCount), tokensFile);
    const scripts = await writeWrkScripts(dir);
    const upstream = await startUpstream(children);
    const baseline = await startBaseline(children, upstream.info.url);
    const cached = await startGateway(children, {
      name: 'gateway (cached)',
      dir: join(dir, 'cached'),
      upstream: upstream.info.url,
      keysDir: key.keysDir,
    });
    const uncached = await startGateway(children, {
      name: 'gateway (cacheSize 1)',
      dir: join(dir, 'uncached'),
      upstream: upstream.info.url,
      keysDir: key.keysDir,
      overrides: { verify: { cacheSize: 1 } },
    });
    const jose = children.add(
      await spawnChild<ServerInfo>('jose verifier', benchChild('peers/joseVerifier'), [
        upstream.info.url,
        key.publicKeyFile,
      ]),
    );
    if (!values['skip-haproxy']) haproxy = await startHaproxy(dir, upstream.info.url, key, PATH);

    const one = [`Authorization: Bearer ${cached.info.token}`];
    const cycling = { script: scripts.tokens, scriptArgs: [tokensFile] };
    const auth = { authorization: `Bearer ${tokens[0]}` };
    const targets: CompareTarget[] = [
      {
        label: 'bare undici passthrough (no auth)',
        url: baseline.info.url + PATH,
        headers: one,
        pid: baseline.pid,
      },
      {
        label: 'Portaria, one token (cache hits)',
        url: cached.info.url + PATH,
        headers: one,
        pid: cached.pid,
      },
    ];
    if (haproxy !== null) {
      targets.push({
        label: `HAProxy jwt_verify ES256 + exp/iss/aud, nbthread 1, ${tokenCount} tokens cycling`,
        url: haproxy.url + PATH,
        pid: haproxy.pid,
        ...cycling,
      });
    }
    targets.push(
      {
        label: `Portaria, cacheSize 1, ${tokenCount} tokens cycling`,
        url: uncached.info.url + PATH,
        pid: uncached.pid,
        ...cycling,
      },
      {
        label: `bare undici + jose jwtVerify, ${tokenCount} tokens cycling`,
        url: jose.info.url + PATH,
        pid: jose.pid,
        ...cycling,
      },
    );
    for (const t of targets) await expectOk(t.url, auth);

    log(header('verify', wrk, timing));
    if (haproxy !== null) log(`C peer: ${haproxy.version}\n`);
    const before = await cacheLookups(uncached.info.adminUrl);
    const measured = await runInterleaved(targets, timing);
    const after = await cacheLookups(uncached.info.adminUrl);

    const byLabel = (prefix: string) => measured.find((m) => m.target.label.startsWith(prefix));
    const [base, hit, peer, miss, bare] = [
      byLabel('bare undici passthrough'),
      byLabel('Portaria, one token'),
      byLabel('HAProxy'),
      byLabel('Portaria, cacheSize 1'),
      byLabel('bare undici + jose'),
    ];
    log('\n## Verification (ratios against the first row; medians of per-round ratios)\n');
    log(resultTable(measured));
    log('');
    if (hit && base)
      log(verdict('cached token / bare passthrough', hit, base, { minRps: 0.9, maxCpu: 1 / 0.9 }));
    if (miss && peer) {
      log(verdict('cache defeated / HAProxy', miss, peer, { minRps: 1, maxCpu: 1 }));
    }
    if (miss && bare) log(verdict('cache defeated / bare undici + jose', miss, bare));
    log(
      `\nchecks: the cacheSize-1 gateway's cache saw ${after.hit - before.hit} hits and ${after.miss - before.miss} misses during the rounds, warm-ups included (all but a handful must miss)`,
    );
    return 0;
  } finally {
    await haproxy?.stop();
    await children.stopAll();
    await rm(dir, { recursive: true, force: true });
  }
}
