/**
 * Mode `authorizer`: what a decision costs when nginx asks Portaria (`auth_request`,
 * `mode: authorizer`) instead of Portaria forwarding, against the same upstream, one
 * token, the same wrk load, in interleaved rounds. Rows:
 *
 *   nginx → upstream                 the baseline: nginx proxying, no authorization
 *   nginx auth_request → Portaria    docs/examples/nginx-auth-request.conf, decision
 *                                    cache off: one decision per request
 *   … with the decision cache        docs/examples/nginx-auth-request-cache.conf,
 *                                    `cacheDecisions` on (5 s): nginx's cache answers
 *   Portaria proxy mode              the gateway forwarding (verified-token cache hits)
 *   nginx → Portaria proxy mode      nginx in front of the forwarding gateway
 *   HAProxy jwt_verify               the C peer of the verify mode (every request
 *                                    verified, no cache); `--skip-haproxy` leaves it out
 *
 * nginx runs one worker, HAProxy one thread, each gateway one process, every gateway
 * logging and counting as in production. A row's CPU per request is that of every process
 * on its path (nginx and the Portaria it asks, added), read from /proc; the breakdown is
 * printed below the table. Ratios against the baseline, medians of the per-round ratios.
 *
 *   npm run bench -- --mode authorizer [--rounds 3] [--duration 5] [--warmup 3]
 *     [--connections 50] [--skip-haproxy]
 *
 * Needs wrk and nginx (and haproxy unless skipped).
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBenchKey, mintToken } from '../lib/benchKey.js';
import {
  type CompareTarget,
  type Measured,
  resultTable,
  runInterleaved,
  verdict,
} from '../lib/comparison.js';
import { countedRequests } from '../lib/gatewayChecks.js';
import { ChildSet, expectOk, startGateway, startUpstream } from '../lib/gateways.js';
import { header, parseModeArgs, requireWrk, TIMING_OPTIONS, timingOf } from '../lib/modeArgs.js';
import { type BenchNginx, exampleConfig, requireNginx, startNginx } from '../lib/nginx.js';
import { median } from '../lib/stats.js';
import { type Haproxy, startHaproxy } from '../peers/haproxy.js';

const PATH = '/v1/orders/42';
const MAX_AGE_SECONDS = 5;
const log = (text: string) => process.stdout.write(`${text}\n`);

/** nginx proxying straight to `upstream` (`host:port`), as the examples' application location does. */
function proxyOnly(upstream: string): (port: number) => string {
  return (port) => `upstream bench_application {
    server ${upstream};
    keepalive 32;
}
server {
    listen 127.0.0.1:${port};
    location / {
        proxy_pass http://bench_application;
        proxy_http_version 1.1;
        proxy_set_header Connection        "";
        proxy_set_header Host              $host;
        proxy_set_header X-Forwarded-For   $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
    }
}
`;
}

/** Throws unless `url` refuses a request without a token and one with a bad token. */
async function expectRefusals(url: string, token: string): Promise<void> {
  const forged = `${token.slice(0, -4)}AAAA`;
  for (const headers of [{}, { authorization: `Bearer ${forged}` }] as Record<string, string>[]) {
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    if (res.status !== 401) {
      throw new Error(`${url} answered ${res.status} to a request it must refuse (401)`);
    }
  }
}

const hostOf = (url: string) => new URL(url).host;

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, {
    ...TIMING_OPTIONS,
    'skip-haproxy': { type: 'boolean', default: false },
  });
  const timing = timingOf(values);
  const wrk = requireWrk();
  const nginxVersion = requireNginx();
  const dir = await mkdtemp(join(tmpdir(), 'portaria-bench-authorizer-'));
  const children = new ChildSet();
  const nginxes: BenchNginx[] = [];
  let haproxy: Haproxy | null = null;
  const nginx = async (name: string, http: (port: number) => string) => {
    const root = join(dir, name);
    await mkdir(root, { recursive: true });
    const started = await startNginx(root, http);
    nginxes.push(started);
    return started;
  };
  try {
    const key = await createBenchKey(dir);
    const token = mintToken(key, { expiresInS: 86_400 });
    const upstream = await startUpstream(children);
    const application = hostOf(upstream.info.url);
    const authorizer = (cache: boolean) => ({
      mode: 'authorizer',
      server: { trustedProxies: ['127.0.0.1'] },
      authorizer: {
        host: '127.0.0.1',
        port: 0,
        grpc: { enabled: false },
        cacheDecisions: { enabled: cache, maxAgeSeconds: MAX_AGE_SECONDS },
      },
    });
    const deciding = await startGateway(children, {
      name: 'Portaria authorizer',
      dir: join(dir, 'deciding'),
      upstream: upstream.info.url,
      keysDir: key.keysDir,
      overrides: authorizer(false),
    });
    const cacheable = await startGateway(children, {
      name: 'Portaria authorizer (cacheable)',
      dir: join(dir, 'cacheable'),
      upstream: upstream.info.url,
      keysDir: key.keysDir,
      overrides: authorizer(true),
    });
    const proxy = await startGateway(children, {
      name: 'Portaria proxy',
      dir: join(dir, 'proxy'),
      upstream: upstream.info.url,
      keysDir: key.keysDir,
    });
    const baseline = await nginx('baseline', proxyOnly(application));
    const asking = await nginx(
      'asking',
      await exampleConfig('nginx-auth-request.conf', {
        decisions: hostOf(deciding.info.authorizerUrl),
        application,
      }),
    );
    const caching = await nginx(
      'caching',
      await exampleConfig('nginx-auth-request-cache.conf', {
        decisions: hostOf(cacheable.info.authorizerUrl),
        application,
        cacheDir: join(dir, 'decision-cache'),
      }),
    );
    const fronting = await nginx('fronting', proxyOnly(hostOf(proxy.info.url)));
    if (!values['skip-haproxy']) haproxy = await startHaproxy(dir, upstream.info.url, key, PATH);

    const headers = [`Authorization: Bearer ${token}`];
    const targets: CompareTarget[] = [
      { label: 'nginx → upstream (no auth)', url: baseline.url + PATH, headers, pid: baseline.pid },
      {
        label: 'nginx auth_request → Portaria authorizer, decision cache off',
        url: asking.url + PATH,
        headers,
        pid: asking.pid,
        pids: [deciding.pid],
      },
      {
        label: `nginx auth_request → Portaria authorizer, decision cache on (${MAX_AGE_SECONDS} s)`,
        url: caching.url + PATH,
        headers,
        pid: caching.pid,
        pids: [cacheable.pid],
      },
      {
        label: 'Portaria proxy mode (verified-token cache hits)',
        url: proxy.info.url + PATH,
        headers,
        pid: proxy.pid,
      },
      {
        label: 'nginx → Portaria proxy mode',
        url: fronting.url + PATH,
        headers,
        pid: fronting.pid,
        pids: [proxy.pid],
      },
    ];
    if (haproxy !== null) {
      targets.push({
        label: 'HAProxy jwt_verify ES256 + exp/iss/aud, nbthread 1 (no cache)',
        url: haproxy.url + PATH,
        headers,
        pid: haproxy.pid,
      });
    }
    const auth = { authorization: `Bearer ${token}` };
    for (const t of targets) await expectOk(t.url, auth);
    for (const t of targets.slice(1)) await expectRefusals(t.url, token);

    log(header('authorizer', wrk, timing));
    log(
      `${nginxVersion}, one worker, access log off${haproxy === null ? '' : `; C peer: ${haproxy.version}`}\n`,
    );
    const counted = async () => [
      Number(await countedRequests(deciding.info.adminUrl)),
      Number(await countedRequests(cacheable.info.adminUrl)),
    ];
    const before = await counted();
    const measured = await runInterleaved(targets, timing);
    const after = await counted();

    log(
      '\n## Authorizer mode behind nginx (ratios against the first row; medians of per-round ratios)\n',
    );
    log(resultTable(measured));
    log('\nCPU µs per request, by process (medians of rounds):');
    for (const m of measured) {
      const parts = m.samples.map((s) => s.cpuUsParts);
      if (parts.some((p) => p === undefined)) continue;
      const medians = (parts[0] ?? []).map((_, i) =>
        median(parts.map((p) => p?.[i] ?? Number.NaN)),
      );
      log(
        `- ${m.target.label}: nginx ${medians[0]?.toFixed(1)} + Portaria ${medians[1]?.toFixed(1)}`,
      );
    }
    log('');
    const byLabel = (prefix: string): Measured | undefined =>
      measured.find((m) => m.target.label.startsWith(prefix));
    const [base, off, on, proxied, fronted, peer] = [
      byLabel('nginx → upstream'),
      byLabel('nginx auth_request → Portaria authorizer, decision cache off'),
      byLabel('nginx auth_request → Portaria authorizer, decision cache on'),
      byLabel('Portaria proxy mode'),
      byLabel('nginx → Portaria proxy mode'),
      byLabel('HAProxy'),
    ];
    if (off && base) log(verdict('auth_request, cache off / nginx alone', off, base));
    if (on && base) log(verdict('auth_request, cache on / nginx alone', on, base));
    if (on && off) log(verdict('auth_request, cache on / cache off', on, off));
    if (off && fronted) log(verdict('auth_request, cache off / nginx → proxy mode', off, fronted));
    if (off && proxied) log(verdict('auth_request, cache off / proxy mode', off, proxied));
    if (off && peer) log(verdict('auth_request, cache off / HAProxy jwt_verify', off, peer));
    const [offBefore = 0, onBefore = 0] = before;
    const [offAfter = 0, onAfter = 0] = after;
    const served = (m: Measured | undefined) =>
      m === undefined ? 0 : m.samples.reduce((sum, s) => sum + s.requests, 0);
    log(
      `\nchecks: the cache-off authorizer answered ${offAfter - offBefore} decisions (warm-ups included) for ${served(off)} measured requests; the cacheable one ${onAfter - onBefore} for ${served(on)}`,
    );
    return 0;
  } finally {
    for (const n of nginxes) await n.stop();
    await haproxy?.stop();
    await children.stopAll();
    await rm(dir, { recursive: true, force: true });
  }
}
