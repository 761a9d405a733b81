/**
 * Mode `workers`: `server.workers: 2` against 1, in the same rounds — requests/s and CPU
 * µs per request of the whole process group (primary and workers, from /proc). Both run
 * the production entry (`src/main.js --config`), everything on (access log on stdout, a
 * pipe read by a log-sink process; metrics; local revocation store), one token (cached).
 *
 * With 3 or more CPUs the gateways are pinned to CPUs 0–1 and wrk, the upstream, the log
 * sinks and this process to the others (`taskset`), so the load generator does not take a
 * worker's core; with 2 CPUs nothing can be kept apart and the report says so.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { configSchema } from '../../src/config/schema.js';
import {
  BENCH_AUDIENCE,
  BENCH_CLIENT_ID,
  BENCH_CLIENT_SECRET,
  BENCH_ISSUER,
  BENCH_SCOPE,
} from '../lib/benchClaims.js';
import { type BenchKey, createBenchKey, mintToken } from '../lib/benchKey.js';
import { type CompareTarget, resultTable, runInterleaved, verdict } from '../lib/comparison.js';
import { freePort } from '../lib/freePort.js';
import { benchChild, ChildSet, expectOk, startUpstream } from '../lib/gateways.js';
import { header, parseModeArgs, requireWrk, TIMING_OPTIONS, timingOf } from '../lib/modeArgs.js';
import { processTree } from '../lib/processTree.js';
import { spawnChild } from '../lib/spawnChild.js';

const PATH = '/v1/orders/42';
const MAIN = new URL('../../src/main.js', import.meta.url);
const log = (text: string) => process.stdout.write(`${text}\n`);

interface Running {
  readonly url: string;
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, TIMING_OPTIONS);
  const timing = timingOf(values);
  const wrk = requireWrk();
  const serverProps = (configSchema.properties.server as { properties: Record<string, unknown> })
    .properties;
  if (!('workers' in serverProps)) {
    process.stderr.write(
      'bench: this build has no `server.workers` setting: the workers mode needs it.\n',
    );
    return 2;
  }
  const dir = await mkdtemp(join(tmpdir(), 'portaria-bench-workers-'));
  const children = new ChildSet();
  const gateways: Running[] = [];
  try {
    const key = await createBenchKey(dir);
    const upstream = await startUpstream(children);
    const start = async (workers: number) => {
      const g = await startMain(
        children,
        join(dir, `workers-${workers}`),
        upstream.info.url,
        key,
        workers,
      );
      gateways.push(g);
      return g;
    };
    const one = await start(1);
    const two = await start(2);
    const cpus = availableParallelism();
    let pinning = 'not pinned: 2 CPUs cannot keep wrk and the upstream away from 2 workers';
    if (cpus >= 3 && spawnSync('taskset', ['-V']).status === 0) {
      const load = `2-${cpus - 1}`;
      pinTree('0-1', one.pid, two.pid);
      pinTree(load, process.pid, upstream.pid);
      for (const sink of children.pids()) if (sink !== upstream.pid) pinTree(load, sink);
      pinning = `gateways on CPUs 0-1; wrk, upstream, log sinks on CPUs ${load}`;
    }
    const token = mintToken(key);
    const headers = [`Authorization: Bearer ${token}`];
    const targets: CompareTarget[] = [
      { label: 'Portaria, server.workers 1', url: one.url + PATH, headers, pid: one.pid },
      { label: 'Portaria, server.workers 2', url: two.url + PATH, headers, pid: two.pid },
    ];
    for (const t of targets) await expectOk(t.url, { authorization: `Bearer ${token}` });
    log(header('workers', wrk, timing));
    log(
      `${pinning}; CPU = primary + workers; processes: ${processTree(one.pid ?? 0).length} and ${processTree(two.pid ?? 0).length}\n`,
    );
    const measured = await runInterleaved(targets, timing);
    log('\n## Workers (ratios against one worker; medians of per-round ratios)\n');
    log(resultTable(measured));
    const [m1, m2] = measured;
    if (m1 && m2) log(`\n${verdict('2 workers / 1 worker', m2, m1)}`);
    return 0;
  } finally {
    for (const g of gateways.reverse()) await g.stop();
    await children.stopAll();
    await rm(dir, { recursive: true, force: true });
  }
}

/** `taskset -a -p -c` on every thread of each process tree. */
function pinTree(cpus: string, ...roots: (number | undefined)[]): void {
  for (const root of roots) {
    if (root === undefined) continue;
    for (const pid of processTree(root)) {
      spawnSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
    }
  }
}

/** The production entry with a config file; stdout (the log) to a FIFO read by a log sink. */
async function startMain(
  children: ChildSet,
  dir: string,
  upstream: string,
  key: BenchKey,
  workers: number,
): Promise<Running> {
  await mkdir(dir, { recursive: true });
  const clientsFile = join(dir, 'clients.json');
  await writeFile(
    clientsFile,
    JSON.stringify({
      clients: [
        {
          id: BENCH_CLIENT_ID,
          secrets: [{ hash: hashGeneratedSecret(BENCH_CLIENT_SECRET) }],
          scopes: [BENCH_SCOPE],
        },
      ],
    }),
  );
  const port = await freePort();
  const adminPort = await freePort();
  const config = {
    server: {
      host: '127.0.0.1',
      port,
      shutdownGraceMs: 1000,
      ...(workers === 1 ? {} : { workers }),
    },
    admin: { host: '127.0.0.1', port: adminPort },
    issuer: BENCH_ISSUER,
    audience: BENCH_AUDIENCE,
    keys: { dir: key.keysDir },
    clients: { file: clientsFile },
    revocation: { store: 'local', file: join(dir, 'revocations.log') },
    upstream: { default: { upstream, scopes: [BENCH_SCOPE] } },
    log: { level: 'info' },
  };
  const configFile = join(dir, 'portaria.yaml'); // JSON is YAML 1.2
  await writeFile(configFile, JSON.stringify(config));
  const fifo = `${dir}.log.fifo`;
  const made = spawnSync('mkfifo', ['-m', '600', fifo], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr}`);
  children.add(await spawnChild(`workers ${workers} log sink`, benchChild('logSink'), [fifo]));
  const out = openSync(fifo, 'w'); // waits for the sink to open its end
  const child = spawn(process.execPath, [MAIN.pathname, '--config', configFile], {
    stdio: ['ignore', out, 'inherit'],
  });
  closeSync(out);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running: Running = {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`gateway (workers ${workers}) exited with ${child.exitCode}`);
    try {
      const res = await fetch(`http://127.0.0.1:${adminPort}/readyz`);
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await running.stop();
      throw new Error(`gateway (workers ${workers}) not ready after 60 s`);
    }
    await sleep(200);
  }
  return running;
}
