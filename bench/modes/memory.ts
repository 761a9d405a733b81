/**
 * Mode `memory`: the resident set of a gateway holding `--tokens` (default 100,000)
 * distinct tokens in its verified-token cache (`verify.cacheSize` = the token count), each
 * verified once, against the same gateway in the same run holding one token. Verdict:
 * RSS ≤ 150 MB (10⁶ bytes). The cache's own gauge must show every token held.
 *
 * The requests come from this process (undici, 64 connections), each token once.
 *
 * The table splits the heap V8 holds into the young generation (grown by the fill's load,
 * not by the cache) and the old space (where the cache lives). Both gateways run with
 * `--max-semi-space-size=8`, as the container image starts the gateway (Dockerfile
 * ENTRYPOINT); `--semi-space-mib N` gives another size, `--semi-space-mib 0` V8's own
 * default. `--settle-seconds` is the idle time before the reading.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { createBenchKey, mintToken } from '../lib/benchKey.js';
import { ChildSet, expectOk, startGateway, startUpstream } from '../lib/gateways.js';
import { header, parseModeArgs, positiveInt, requireWrk } from '../lib/modeArgs.js';
import { treeRssBytes } from '../lib/processTree.js';

const PATH = '/v1/orders/42';
const TARGET_BYTES = 150e6;
const CONCURRENCY = 64;
/** The container image's `--max-semi-space-size` (Dockerfile ENTRYPOINT). */
const IMAGE_SEMI_SPACE_MIB = 8;
const log = (text: string) => process.stdout.write(`${text}\n`);
const mib = (bytes: number) =>
  `${(bytes / 2 ** 20).toFixed(1)} MiB (${(bytes / 1e6).toFixed(1)} MB)`;

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, {
    tokens: { type: 'string', default: '100000' },
    'settle-seconds': { type: 'string', default: '5' },
    'semi-space-mib': { type: 'string', default: String(IMAGE_SEMI_SPACE_MIB) },
  });
  const count = positiveInt(values, 'tokens');
  const settleS = positiveInt(values, 'settle-seconds');
  // V8's young generation grows under load to 2 × 16 MiB by default; both gateways get
  // the image's cap (or the one given), so the RSS is the cache's rather than the load's.
  const semiSpace = values['semi-space-mib'] === '0' ? 0 : positiveInt(values, 'semi-space-mib');
  const nodeArgs = semiSpace === 0 ? [] : [`--max-semi-space-size=${semiSpace}`];
  const wrk = requireWrk();
  const dir = await mkdtemp(join(tmpdir(), 'portaria-bench-memory-'));
  const children = new ChildSet();
  try {
    const key = await createBenchKey(dir);
    const upstream = await startUpstream(children);
    const overrides = { verify: { cacheSize: count } };
    const start = (name: string) =>
      startGateway(children, {
        name,
        dir: join(dir, name),
        upstream: upstream.info.url,
        keysDir: key.keysDir,
        overrides,
        nodeArgs,
      });
    const reference = await start('reference');
    const full = await start('full');
    log(header('memory', wrk));
    log(
      `both gateways: ${semiSpace === 0 ? "V8's default young generation" : `--max-semi-space-size=${semiSpace} (as the container image)`}`,
    );
    const minted = Date.now();
    const tokens = Array.from({ length: count }, () => mintToken(key));
    log(`${count} distinct tokens minted in ${((Date.now() - minted) / 1000).toFixed(1)} s`);
    await expectOk(reference.info.url + PATH, { authorization: `Bearer ${tokens[0]}` });

    const sent = Date.now();
    const failures = await sendEachOnce(full.info.url, tokens);
    log(
      `${count} requests (each token once) in ${((Date.now() - sent) / 1000).toFixed(1)} s, ${failures} not answered 200`,
    );
    tokens.length = 0;
    await sleep(settleS * 1000);
    const entries = async (adminUrl: string) => {
      const text = await (await fetch(`${adminUrl}/metrics`)).text();
      const read = (name: string) =>
        Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
      const space = (name: string) =>
        Number(
          new RegExp(`^nodejs_heap_space_size_total_bytes\\{space="${name}"\\} (\\S+)$`, 'm').exec(
            text,
          )?.[1] ?? Number.NaN,
        );
      return {
        cached: read('portaria_verify_cache_entries'),
        heap: read('nodejs_heap_size_used_bytes'),
        heapTotal: read('nodejs_heap_size_total_bytes'),
        newSpace: space('new'),
        oldSpace: space('old'),
        external: read('nodejs_external_memory_bytes'),
      };
    };
    const refRss = treeRssBytes(reference.pid);
    const fullRss = treeRssBytes(full.pid);
    const refMetrics = await entries(reference.info.adminUrl);
    const fullMetrics = await entries(full.info.adminUrl);
    log('\n## Memory (verify.cacheSize = token count)\n');
    // Where the RSS is: the heap V8 holds (young generation and old space apart) and the
    // memory outside it (array buffers, OpenSSL, sockets).
    log('| gateway | tokens in cache | RSS | heap used | heap held (new / old space) | external |');
    log('|---|---:|---:|---:|---:|---:|');
    const row = (name: string, rss: number, m: typeof refMetrics) =>
      log(
        `| ${name} | ${m.cached} | ${mib(rss)} | ${mib(m.heap)} | ${mib(m.heapTotal)} (${mib(m.newSpace)} / ${mib(m.oldSpace)}) | ${mib(m.external)} |`,
      );
    row('reference: one token verified', refRss, refMetrics);
    row(`${count} distinct tokens verified once`, fullRss, fullMetrics);
    const perToken = (fullRss - refRss) / Math.max(1, fullMetrics.cached - refMetrics.cached);
    log(
      `\nRSS ${mib(fullRss)} → ${fullRss <= TARGET_BYTES ? 'PASS' : 'ABOVE TARGET'} (target ≤ 150 MB); ` +
        `${(fullRss / refRss).toFixed(2)}× the reference, ${(perToken / 1024).toFixed(2)} KiB of RSS per cached token`,
    );
    if (fullMetrics.cached < count) {
      log(`check FAILED: the cache holds ${fullMetrics.cached} entries, not ${count}`);
    }
    return 0;
  } finally {
    await children.stopAll();
    await rm(dir, { recursive: true, force: true });
  }
}

/** GETs `PATH` once per token, `CONCURRENCY` at a time; returns how many were not 200. */
async function sendEachOnce(url: string, tokens: readonly string[]): Promise<number> {
  // Bounded: a gateway that stops answering fails the run instead of hanging it.
  const pool = new Pool(url, {
    connections: CONCURRENCY,
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  let next = 0;
  let failures = 0;
  const worker = async () => {
    while (next < tokens.length) {
      const token = tokens[next++] as string;
      const res = await pool.request({
        path: PATH,
        method: 'GET',
        headers: { authorization: `Bearer ${token}` },
      });
      await res.body.dump();
      if (res.statusCode !== 200) failures++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  await pool.close();
  return failures;
}
