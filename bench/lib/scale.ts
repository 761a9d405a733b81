/**
 * The scale modes' shared run: one gateway per variant (its own settings, the same key
 * and upstream), every variant measured with the same token on the same path in
 * interleaved rounds, requests/s and CPU per request against the first variant, and the
 * verdict: flat when every variant's median ratio lies within ±10 %.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BenchKey, createBenchKey, mintToken } from './benchKey.js';
import {
  type CompareTarget,
  flatness,
  resultTable,
  runInterleaved,
  type Timing,
} from './comparison.js';
import { ChildSet, expectOk, startGateway, startUpstream } from './gateways.js';
import { header, requireWrk } from './modeArgs.js';

export interface Variant {
  readonly label: string;
  /** Settings for this variant's gateway; may write files into `dir` first. */
  overrides(dir: string, upstream: string, key: BenchKey): Promise<Record<string, unknown>>;
  /** A line proving the gateway runs with what the variant says, read from its /metrics. */
  check?(metrics: string): string;
}

const log = (text: string) => process.stdout.write(`${text}\n`);

export async function runScale(
  mode: string,
  path: string,
  variants: readonly Variant[],
  timing: Timing,
): Promise<number> {
  const wrk = requireWrk();
  const dir = await mkdtemp(join(tmpdir(), `portaria-bench-${mode}-`));
  const children = new ChildSet();
  try {
    const key = await createBenchKey(dir);
    const token = mintToken(key);
    const upstream = await startUpstream(children);
    const targets: CompareTarget[] = [];
    const checks: string[] = [];
    for (const [i, variant] of variants.entries()) {
      const gatewayDir = join(dir, `gateway-${i}`);
      const started = Date.now();
      const gateway = await startGateway(children, {
        name: `gateway (${variant.label})`,
        dir: gatewayDir,
        upstream: upstream.info.url,
        keysDir: key.keysDir,
        overrides: await variant.overrides(gatewayDir, upstream.info.url, key),
        readyTimeoutMs: 300_000,
      });
      log(
        `started gateway with ${variant.label} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
      if (variant.check !== undefined) {
        const metrics = await (await fetch(`${gateway.info.adminUrl}/metrics`)).text();
        checks.push(`${variant.label}: ${variant.check(metrics)}`);
      }
      targets.push({
        label: `Portaria, ${variant.label}`,
        url: gateway.info.url + path,
        headers: [`Authorization: Bearer ${token}`],
        pid: gateway.pid,
      });
    }
    for (const t of targets) await expectOk(t.url, { authorization: `Bearer ${token}` });
    log(header(mode, wrk, timing));
    log(`GET ${path}, one token (cached), everything on\n`);
    const measured = await runInterleaved(targets, timing);
    log(`\n## Scale: ${mode} (ratios against the first row; medians of per-round ratios)\n`);
    log(resultTable(measured));
    log(`\n${flatness(measured)}`);
    if (checks.length > 0) log(`\nchecks: ${checks.join('; ')}`);
    return 0;
  } finally {
    await children.stopAll();
    await rm(dir, { recursive: true, force: true });
  }
}
