/**
 * `portaria keys remove <kid>`: takes a key out of the keys directory — its file and its
 * schedule entry — so that gateways stop publishing it and stop verifying its tokens at
 * their next reload (a key reload empties the verified-token cache). For a compromised
 * key, or a retired one an operator wants gone before its `removeAt`.
 *
 * A key is kept while removing it would leave a gateway without a signer: it signs now,
 * or did `skew` ago (a replica whose clock runs that far behind still sees it signing,
 * and its reload would fail with no active key), and no other key of its algorithm
 * signs at both moments. The emergency path is `keys rotate --jwks-max-age 0` (the new
 * key signs after the skew) and then, once the command allows it, `keys remove <old kid>`.
 *
 * Files, under the schedule's lock like a rotation: the key file is deleted first, then
 * the schedule entry. A crash in between leaves an entry without a key file, which the
 * loader refuses while the key is not yet due for removal (gateways keep their previous
 * ring and log the failed reload) — never a key file without an entry, which would sign
 * at once. Running the command again finishes the job: an entry without a file is removed
 * too.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../config/configError.js';
import type { SigningAlgorithm } from '../config/types.js';
import { withFileLock } from '../lib/fileLock.js';
import {
  formatInstant,
  pickSigner,
  readKeySchedule,
  SCHEDULE_FILE,
  windowOf,
  writeKeySchedule,
} from './keySchedule.js';
import { KID_PATTERN, readKeyDirectory } from './loadKeyRing.js';

/** A removal that must not happen (exit 1, not a usage error). */
export class KeyRemovalRefused extends Error {
  override readonly name = 'KeyRemovalRefused';
}

export interface KeyRemoval {
  readonly kid: string;
  /** The removed key's algorithm; null when only a schedule entry was left of it. */
  readonly alg: SigningAlgorithm | null;
  /** The files deleted (names in the directory), the schedule included when rewritten. */
  readonly files: readonly string[];
}

export async function removeKey(
  dir: string,
  kid: string,
  now: Date,
  skewSeconds: number,
): Promise<KeyRemoval> {
  if (!KID_PATTERN.test(kid)) {
    throw new KeyRemovalRefused(`${JSON.stringify(kid)} is not a kid ([A-Za-z0-9._-]{1,64})`);
  }
  return withFileLock(join(dir, SCHEDULE_FILE), () =>
    removeLocked(dir, kid, now.getTime(), skewSeconds * 1000),
  );
}

async function removeLocked(
  dir: string,
  kid: string,
  now: number,
  skewMs: number,
): Promise<KeyRemoval> {
  const { schedule, problems } = await readKeySchedule(dir);
  if (problems.length > 0) throw new ConfigError(problems, `keys.dir (${dir})`);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError([`keys.dir: ${dir}: cannot read (${code})`], `keys.dir (${dir})`);
  }
  const keyFiles = [`${kid}.pem`, `${kid}.jwk.json`].filter((name) => names.includes(name));
  if (keyFiles.length === 0 && !schedule.has(kid)) {
    throw new KeyRemovalRefused(`no key ${kid} in ${dir} (see "portaria keys list")`);
  }

  let alg: SigningAlgorithm | null = null;
  if (keyFiles.length > 0) {
    const { keys, schedule: loaded } = await readKeyDirectory(dir, now);
    const key = keys.find((k) => k.kid === kid);
    if (key !== undefined) {
      alg = key.alg;
      const window = (k: { kid: string }) => windowOf(loaded.get(k.kid));
      const others = keys.filter((k) => k.kid !== kid);
      for (const at of [now - skewMs, now]) {
        if (pickSigner(keys, window, key.alg, at)?.kid !== kid) continue;
        const next = pickSigner(others, window, key.alg, now);
        if (next === undefined) {
          throw new KeyRemovalRefused(
            `${kid} is the ${key.alg} key that signs now and no other key would take over; rotate first (at once, for a compromised key: "portaria keys rotate --jwks-max-age 0"), then remove it`,
          );
        }
        if (pickSigner(others, window, key.alg, now - skewMs) === undefined) {
          const from = windowOf(loaded.get(next.kid)).activateAt + skewMs;
          throw new KeyRemovalRefused(
            `${kid} still signs on a gateway whose clock is up to the skew (${skewMs / 1000} s) behind; ${next.kid} takes over everywhere at ${formatInstant(from)}: remove ${kid} then`,
          );
        }
      }
    }
    for (const name of keyFiles) await rm(join(dir, name));
  }
  const files = [...keyFiles];
  if (schedule.has(kid)) {
    const next = new Map(schedule);
    next.delete(kid);
    await writeKeySchedule(dir, next);
    files.push(SCHEDULE_FILE);
  }
  return { kid, alg, files };
}
