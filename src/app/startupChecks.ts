/**
 * What start-up reads without side effects, checked together so that one run reports
 * every problem (as config validation does): the file the revocation store will write,
 * and the loads `createApp` awaits at once (the admin token file: config/adminTokenFile.ts).
 */
import { ConfigError } from '../config/configError.js';
import type { Config } from '../config/types.js';
import { unwritableFileReason } from '../lib/writableFile.js';

/**
 * The file the revocation store will write (the local log, or Redis's durable queue when
 * `whileRedisDown: queue`), checked without creating it: its problem is reported with the
 * others at start. (With `refuse` the queue file is only read, if it exists.)
 */
export async function checkRevocationFile(config: Config): Promise<void> {
  const { revocation } = config;
  const [setting, file] =
    revocation.store === 'local'
      ? ['revocation.file', revocation.file]
      : revocation.store === 'redis' && revocation.whileRedisDown === 'queue'
        ? ['revocation.queueFile', revocation.queueFile]
        : [null, null];
  if (setting === null || file === null) return;
  const reason = await unwritableFileReason(file);
  if (reason !== null) throw new ConfigError([`${setting}: cannot open ${file} (${reason})`]);
}

/**
 * Awaits start-up loads together and, when several fail with configuration problems,
 * reports all of them at once.
 */
export async function allOrEveryProblem<T extends readonly unknown[]>(
  loads: { [K in keyof T]: Promise<T[K]> },
): Promise<T> {
  const settled = await Promise.allSettled(loads);
  const failures = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failures.length === 0) {
    return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
  }
  const reasons = failures.map((f) => f.reason as unknown);
  if (reasons.length > 1 && reasons.every((r) => r instanceof ConfigError)) {
    throw new ConfigError(reasons.flatMap((r) => (r as ConfigError).problems));
  }
  throw reasons[0];
}
