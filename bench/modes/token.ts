/**
 * Mode `token`: the token operation (`POST /v1/authentication/accesstoken`, a sha256
 * client, everything on: token limits enabled — rates set high enough that none refuses —
 * failed-secret back-off, access log to a pipe, metrics) against a bare token server
 * (`bareTokenServer.ts`: JSON body, sha256 secret check, ES256 sign) with the same key,
 * signing with `crypto.sign` (the reference) and with jose's `SignJWT`. Verdict: gateway /
 * bare ≥ 0.90 in requests/s.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIMITS_ON_NOT_REFUSING, TOKEN_PATH } from '../lib/benchClaims.js';
import { createBenchKey } from '../lib/benchKey.js';
import { type CompareTarget, resultTable, runInterleaved, verdict } from '../lib/comparison.js';
import {
  benchChild,
  ChildSet,
  type ServerInfo,
  startGateway,
  startUpstream,
} from '../lib/gateways.js';
import { header, parseModeArgs, requireWrk, TIMING_OPTIONS, timingOf } from '../lib/modeArgs.js';
import { spawnChild } from '../lib/spawnChild.js';
import { writeWrkScripts } from '../lib/wrkScripts.js';

const log = (text: string) => process.stdout.write(`${text}\n`);

interface BareInfo extends ServerInfo {
  readonly clientId: string;
  readonly clientSecret: string;
}

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, TIMING_OPTIONS);
  const timing = timingOf(values);
  const wrk = requireWrk();
  const dir = await mkdtemp(join(tmpdir(), 'portaria-bench-token-'));
  const children = new ChildSet();
  try {
    const key = await createBenchKey(dir);
    const scripts = await writeWrkScripts(dir);
    const upstream = await startUpstream(children);
    const bare = async (signer: string) =>
      children.add(
        await spawnChild<BareInfo>(`bare token server (${signer})`, benchChild('bareTokenServer'), [
          key.privateKeyFile,
          key.kid,
          '--signer',
          signer,
        ]),
      );
    const bareNode = await bare('node');
    const bareJose = await bare('jose');
    const gateway = await startGateway(children, {
      name: 'gateway',
      dir: join(dir, 'gateway'),
      upstream: upstream.info.url,
      keysDir: key.keysDir,
      overrides: LIMITS_ON_NOT_REFUSING,
    });
    const body = JSON.stringify({
      clientId: bareNode.info.clientId,
      clientSecret: bareNode.info.clientSecret,
    });
    const post = { script: scripts.post, scriptArgs: [body] };
    const targets: CompareTarget[] = [
      {
        label: 'bare token server: JSON, sha256, crypto.sign ES256',
        url: bareNode.info.url + TOKEN_PATH,
        pid: bareNode.pid,
        ...post,
      },
      {
        label: 'bare token server: JSON, sha256, jose SignJWT ES256',
        url: bareJose.info.url + TOKEN_PATH,
        pid: bareJose.pid,
        ...post,
      },
      {
        label: 'Portaria token operation (sha256 client, limits on, log + metrics)',
        url: gateway.info.url + TOKEN_PATH,
        pid: gateway.pid,
        ...post,
      },
    ];
    for (const t of targets) {
      const res = await fetch(t.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      const text = await res.text();
      if (res.status !== 200 || !text.includes('token_de_acesso')) {
        throw new Error(`${t.label} answered ${res.status}: ${text}`);
      }
    }
    log(header('token', wrk, timing));
    log(`POST ${TOKEN_PATH} with ${body.length}-byte JSON body, 200 expected for every request\n`);
    const measured = await runInterleaved(targets, timing);
    const [node, jose, portaria] = measured;
    log('\n## Token operation (ratios against the first row; medians of per-round ratios)\n');
    log(resultTable(measured));
    log('');
    if (portaria && node)
      log(
        verdict('Portaria / bare (crypto.sign)', portaria, node, { minRps: 0.9, maxCpu: 1 / 0.9 }),
      );
    if (portaria && jose) log(verdict('Portaria / bare (jose SignJWT)', portaria, jose));
    return 0;
  } finally {
    await children.stopAll();
    await rm(dir, { recursive: true, force: true });
  }
}
