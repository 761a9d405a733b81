/**
 * Mode `soak`: does the gateway's memory stay flat under steady load? First the maximum
 * load is measured (wrk at full speed for `--max-seconds`, tokens cycling through
 * `--tokens` distinct ones, the default verified-token cache); then wrk offers half of it
 * for `--soak-minutes` (default 10): each connection waits 20 ms between requests (a wrk
 * Lua `delay`), with as many connections as that rate needs. The gateway's RSS is sampled
 * every `--sample-seconds`; after `--warmup-minutes` (default 1, at most a fifth of the
 * run) the verdict is flat when max / min ≤ 1.10.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBenchKey, mintTokenFile } from '../lib/benchKey.js';
import { measureOnce } from '../lib/comparison.js';
import { ChildSet, expectOk, startGateway, startUpstream } from '../lib/gateways.js';
import { header, parseModeArgs, positiveInt, requireWrk } from '../lib/modeArgs.js';
import { treeRssBytes } from '../lib/processTree.js';
import { runWrk } from '../lib/wrk.js';
import { writeWrkScripts } from '../lib/wrkScripts.js';

const PATH = '/v1/orders/42';
const PAUSE_MS = 20;
const log = (text: string) => process.stdout.write(`${text}\n`);
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, {
    'soak-minutes': { type: 'string', default: '10' },
    'warmup-minutes': { type: 'string', default: '1' },
    'sample-seconds': { type: 'string', default: '10' },
    'max-seconds': { type: 'string', default: '10' },
    tokens: { type: 'string', default: '1000' },
  });
  const soakS = Number(values['soak-minutes']) * 60;
  const warmupS = Math.min(Number(values['warmup-minutes']) * 60, soakS / 5);
  if (!(soakS >= 10) || !(warmupS >= 0)) {
    process.stderr.write('bench: --soak-minutes must be ≥ 1/6 and --warmup-minutes ≥ 0\n');
    return 2;
  }
  const sampleS = positiveInt(values, 'sample-seconds');
  const maxS = positiveInt(values, 'max-seconds');
  const tokenCount = positiveInt(values, 'tokens');
  const wrk = requireWrk();
  const dir = await mkdtemp(join(tmpdir(), 'portaria-bench-soak-'));
  const children = new ChildSet();
  try {
    const key = await createBenchKey(dir);
    const tokensFile = join(dir, 'tokens.txt');
    const tokens = await mintTokenFile(key, tokenCount, tokensFile);
    const scripts = await writeWrkScripts(dir);
    const upstream = await startUpstream(children);
    const gateway = await startGateway(children, {
      name: 'gateway',
      dir: join(dir, 'gateway'),
      upstream: upstream.info.url,
      keysDir: key.keysDir,
    });
    const url = gateway.info.url + PATH;
    await expectOk(url, { authorization: `Bearer ${tokens[0]}` });
    log(header('soak', wrk));
    const max = await measureOnce(
      { label: 'max', url, pid: gateway.pid, script: scripts.tokens, scriptArgs: [tokensFile] },
      { warmupS: 3, durationS: maxS, connections: 50, threads: 1 },
    );
    const rate = max.perSecond / 2;
    const paced = (connections: number, durationS: number) =>
      runWrk({
        url,
        headers: [],
        connections,
        threads: 1,
        durationS,
        script: scripts.paced,
        scriptArgs: [tokensFile, String(PAUSE_MS)],
      });
    // A connection's cycle is the pause plus the response time plus wrk's timer slack: a
    // 5 s pilot at the nominal count calibrates how many connections give the rate.
    const nominal = Math.max(1, Math.round((rate * PAUSE_MS) / 1000));
    const pilot = await paced(nominal, 5);
    const connections = Math.max(
      1,
      Math.round((nominal * rate) / Math.max(1, pilot.requestsPerSec)),
    );
    log(
      `maximum load: ${max.perSecond.toFixed(0)} req/s (wrk -t1 -c50 -d${maxS}s, ${tokenCount} tokens cycling${max.clean ? '' : ', ERRORS'}); ` +
        `soak at half: ${connections} connections each pausing ${PAUSE_MS} ms (≈ ${rate.toFixed(0)} req/s offered) for ${soakS / 60} min, RSS every ${sampleS} s, warm-up ${warmupS} s\n`,
    );
    const samples: { atS: number; rss: number }[] = [];
    const started = Date.now();
    const sampler = setInterval(() => {
      const atS = Math.round((Date.now() - started) / 1000);
      const rss = treeRssBytes(gateway.pid);
      samples.push({ atS, rss });
      log(`t=${atS} s RSS ${mib(rss)} MiB`);
    }, sampleS * 1000);
    let soaked: Awaited<ReturnType<typeof runWrk>>;
    try {
      soaked = await paced(connections, Math.round(soakS));
    } finally {
      clearInterval(sampler);
    }
    const steady = samples.filter((s) => s.atS >= warmupS).map((s) => s.rss);
    const lo = Math.min(...steady);
    const hi = Math.max(...steady);
    log(`\n## Soak: RSS over ${soakS / 60} min at half the maximum load\n`);
    log(
      `served ${soaked.requests} requests, ${soaked.requestsPerSec.toFixed(0)} req/s (${(soaked.requestsPerSec / max.perSecond).toFixed(2)} of the maximum)${soaked.non2xx + soaked.socketErrors > 0 ? `, ${soaked.non2xx} non-2xx and ${soaked.socketErrors} socket errors` : ''}`,
    );
    log(
      `RSS after warm-up (${steady.length} samples): min ${mib(lo)} MiB, max ${mib(hi)} MiB, max / min = ${(hi / lo).toFixed(3)} → ${steady.length > 1 && hi / lo <= 1.1 ? 'FLAT' : 'NOT FLAT'} (target ≤ 1.10)`,
    );
    return 0;
  } finally {
    await children.stopAll();
    await rm(dir, { recursive: true, force: true });
  }
}
