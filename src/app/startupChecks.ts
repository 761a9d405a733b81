/**
 * What start-up reads without side effects, checked together so that one run reports
 * every problem (as config validation does): the admin token file, the file the
 * revocation store will write, and the loads `createApp` awaits at once.
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from '../config/configError.js';
import type { Config } from '../config/types.js';
import { unwritableFileReason } from '../lib/writableFile.js';

/** Shortest admin token accepted: it guards revocations, so it must not be guessable. */
const MIN_ADMIN_TOKEN_LENGTH = 16;

/** The admin API token from `admin.tokenFile`; null (API off) when none is configured. */
export async function readAdminToken(file: string | null): Promise<string | null> {
  if (file === null) return null;
  let token: string;
  try {
    token = (await readFile(file, 'utf8')).trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError([`admin.tokenFile: cannot read ${file} (${code})`]);
  }
  if (token.length < MIN_ADMIN_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(token)) {
    throw new ConfigError([
      `admin.tokenFile: ${file} must hold at least ${MIN_ADMIN_TOKEN_LENGTH} visible ASCII characters`,
    ]);
  }
  return token;
}

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
