/**
 * `portaria keys remove <kid>`: takes a key (its file and its schedule entry) out of the
 * keys directory, so gateways stop publishing it and stop verifying its tokens at their next
 * reload.
 *
 * A key is kept while removing it would leave a replica without a signer: it signs now, or
 * did `skew` ago (a replica whose clock runs that far behind still sees it signing), and no
 * other key signs for the gateways' token.algorithm at both moments. Removing a scheduled key that does not
 * sign yet cancels its rotation: the keys it was to replace keep signing (their `retireAt`
 * and `removeAt` cleared); any other removal that would leave a gap later is refused.
 * Under the schedule's lock, the cancelled rotation's schedule is written first, then the
 * key file deleted, then its entry: a crash leaves an entry without a file, which the
 * loader refuses, never a file without an entry, which would sign at once. Running the
 * command again finishes the job.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../config/configError.js';
import type { SigningAlgorithm } from '../config/types.js';
import { withEditLock } from '../lib/editLock.js';
import {
  formatInstant,
  pickSigner,
  readKeySchedule,
  SCHEDULE_FILE,
  type Window,
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
  /** Keys whose retirement was cancelled with the pending key's rotation. */
  readonly keptSigning: readonly string[];
  /** The removed key's algorithm; null when only a schedule entry was left of it. */
  readonly alg: SigningAlgorithm | null;
  /** The files deleted (names in the directory), the schedule included when rewritten. */
  readonly files: readonly string[];
}

/**
 * `algorithm` is the gateways' token.algorithm, which decides the signer (`pickSigner`):
 * a key that never signs there (one of another algorithm without a rotation handing
 * signing to it) passes the signer checks as it is.
 */
export async function removeKey(
  dir: string,
  kid: string,
  now: Date,
  skewSeconds: number,
  algorithm: SigningAlgorithm,
): Promise<KeyRemoval> {
  if (!KID_PATTERN.test(kid)) {
    throw new KeyRemovalRefused(`${JSON.stringify(kid)} is not a kid ([A-Za-z0-9._-]{1,64})`);
  }
  return withEditLock(join(dir, SCHEDULE_FILE), () =>
    removeLocked(dir, kid, now.getTime(), skewSeconds * 1000, algorithm),
  );
}

async function removeLocked(
  dir: string,
  kid: string,
  now: number,
  skewMs: number,
  algorithm: SigningAlgorithm,
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
  let nextSchedule = new Map(schedule);
  const keptSigning: string[] = [];
  if (keyFiles.length > 0) {
    const { keys, schedule: loaded } = await readKeyDirectory(dir, now);
    const key = keys.find((k) => k.kid === kid);
    if (key !== undefined) {
      alg = key.alg;
    }
    if (key !== undefined) {
      const window = (k: { kid: string }) => windowOf(loaded.get(k.kid));
      const others = keys.filter((k) => k.kid !== kid);
      for (const at of [now - skewMs, now]) {
        if (pickSigner(keys, window, algorithm, at)?.kid !== kid) continue;
        const next = pickSigner(others, window, algorithm, now);
        if (next === undefined) {
          throw new KeyRemovalRefused(
            `${kid} is the ${key.alg} key that signs now and no other key would take over; rotate first (at once, for a compromised key: "portaria keys rotate --jwks-max-age 0"), then remove it`,
          );
        }
        if (pickSigner(others, window, algorithm, now - skewMs) === undefined) {
          const from = windowOf(loaded.get(next.kid)).activateAt + skewMs;
          throw new KeyRemovalRefused(
            `${kid} still signs on a gateway whose clock is up to the skew (${skewMs / 1000} s) behind; ${next.kid} takes over everywhere at ${formatInstant(from)}: remove ${kid} then`,
          );
        }
      }
      const activateAt = window(key).activateAt;
      if (activateAt > now) {
        // A pending key: cancel the rotation that scheduled it (whatever the algorithms:
        // one to another algorithm retires the old algorithm's keys at the same instant).
        for (const other of others) {
          const entry = nextSchedule.get(other.kid);
          if (entry !== undefined && entry.retireAt === activateAt) {
            nextSchedule.set(other.kid, { ...entry, retireAt: null, removeAt: null });
            keptSigning.push(other.kid);
          }
        }
      }
      const after = (k: { kid: string }) => windowOf(nextSchedule.get(k.kid));
      const gap = signerGap(keys, window, others, after, algorithm, now - skewMs);
      if (gap !== undefined) {
        const what = key.alg === algorithm ? `no ${key.alg} key` : 'no key';
        throw new KeyRemovalRefused(
          `removing ${kid} would leave ${what} signing from ${formatInstant(gap)} (see "portaria keys list"); rotate to another key first`,
        );
      }
    }
    if (keptSigning.length > 0) await writeKeySchedule(dir, nextSchedule);
    for (const name of keyFiles) await rm(join(dir, name));
  }
  const files = [...keyFiles];
  if (nextSchedule.has(kid)) {
    nextSchedule = new Map(nextSchedule);
    nextSchedule.delete(kid);
    await writeKeySchedule(dir, nextSchedule);
    files.push(SCHEDULE_FILE);
  } else if (keptSigning.length > 0) {
    files.push(SCHEDULE_FILE);
  }
  return { kid, alg, keptSigning, files };
}

/**
 * The first instant from `from` on at which `before` had a signer for token.algorithm
 * `alg` and `after` has none (the instants where a signer can change: `from` and every key's activation
 * and retirement), or undefined.
 */
function signerGap<K extends { readonly kid: string; readonly alg: SigningAlgorithm }>(
  before: readonly K[],
  windowBefore: (key: K) => Window,
  after: readonly K[],
  windowAfter: (key: K) => Window,
  alg: SigningAlgorithm,
  from: number,
): number | undefined {
  const instants = new Set([from]);
  for (const key of before) {
    for (const w of [windowBefore(key), windowAfter(key)]) {
      if (Number.isFinite(w.activateAt) && w.activateAt > from) instants.add(w.activateAt);
      if (Number.isFinite(w.retireAt) && w.retireAt > from) instants.add(w.retireAt);
    }
  }
  for (const at of [...instants].sort((a, b) => a - b)) {
    if (pickSigner(after, windowAfter, alg, at) !== undefined) continue;
    if (pickSigner(before, windowBefore, alg, at) !== undefined) return at;
  }
  return undefined;
}
