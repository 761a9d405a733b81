/**
 * Gateway processes (`main.js --config`) sharing one Redis setting: replicas with the same
 * keys and clients, each on its own ports, started and checked ready.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { startUpstream } from '../helpers/fixture.js';
import {
  type RunningProcess,
  runGateway,
  tempDir,
  waitForStatus,
  writeGatewayFiles,
} from '../helpers/process.js';
import { writeAdminToken } from '../helpers/redisFixtures.js';

export const CLIENT = 'acme';
export const SECRET = 'acme-redis-secret-0123456789abcdefghijklmnop';

export interface Replica {
  readonly publicUrl: string;
  readonly adminUrl: string;
  readonly process: RunningProcess;
}

/**
 * `count` replicas with `settings` (the `redis` section and the stores); `files` are
 * written into the first replica's directory first (password files, named relative to it).
 */
export async function startReplicas(
  t: TestContext,
  count: number,
  settings: Record<string, unknown>,
  files: Record<string, string> = {},
): Promise<Replica[]> {
  const upstream = await startUpstream(t);
  const dir = await tempDir(t, 'portaria-replicas-');
  for (const [name, content] of Object.entries(files)) {
    await writeFile(join(dir, name), content, { mode: 0o600 });
  }
  const first = await writeGatewayFiles(dir, [[CLIENT, SECRET, ['orders:read']]], {
    upstream: { default: { upstream: upstream.url } },
    tokenLimits: {
      store: 'redis',
      perAddress: { ratePerSecond: 1000, burst: 1000 },
      perClient: { ratePerSecond: 1000, burst: 1000 },
    },
    revocation: { store: 'redis' },
    ...settings,
  });
  const config = JSON.parse(await readFile(first.configFile, 'utf8')) as Record<string, unknown>;
  const env = { PORTARIA_ADMIN_TOKEN_FILE: await writeAdminToken(dir) };
  const replicas: Replica[] = [];
  for (let i = 0; i < count; i += 1) {
    let configFile = first.configFile;
    if (i > 0) {
      // Port 0: each replica takes its own ports and its "listening" line says which.
      configFile = join(dir, `replica-${i}.yaml`);
      await writeFile(
        configFile,
        JSON.stringify({
          ...config,
          server: { ...(config.server as object), port: 0 },
          admin: { host: '127.0.0.1', port: 0 },
          revocation: { ...(config.revocation as object), queueFile: `pending-${i}.log` },
        }),
      );
    }
    const process = runGateway(t, ['--config', configFile], { cwd: dir, env });
    const { publicUrl, adminUrl } = await process.listening(15_000);
    replicas.push({ publicUrl, adminUrl, process });
  }
  await Promise.all(replicas.map((r) => waitForStatus(`${r.adminUrl}/readyz`, 200, 15_000)));
  return replicas;
}
