/**
 * `portaria keys rotate`: adds a new signing key and schedules the hand-over so that no
 * verification fails anywhere, at the gateway or at a third party caching our JWKS: the new
 * key is published now and signs only once every cached JWKS has it (jwksMaxAge + skew);
 * the old one stays published until its last token expired.
 *
 * At T, with jwksMaxAge M, skew S and longest lifetime L: the new key publishes at T and
 * activates at T + M + S (a verifier that fetched the JWKS just before T keeps it at most
 * M, and a replica whose clock runs S ahead signs S early); the keys signing now retire
 * then and are removed at T + M + S + L + S (the last token of a replica S behind has
 * expired). Retired keys without an entry get one from the epoch. A rotation is refused
 * while another is pending: it would retire a key that has not signed yet.
 *
 * The new key's algorithm may differ from the signer's (ES256 → PS256): the same plan
 * retires every active key of the gateways' token.algorithm then, and `pickSigner` hands
 * signing to the new key on replicas still configured for the old algorithm, so the
 * configuration can follow at any time after the hand-over.
 *
 * Under the schedule's lock (`withEditLock`), the schedule is written first, then the key
 * file, and the previous schedule is put back when the key cannot be written: a crash
 * leaves an entry without a key file, which the loader refuses, never a key without an
 * entry, which would sign at once.
 */
import { join } from 'node:path';
import type { SigningAlgorithm } from '../config/types.js';
import { withEditLock } from '../lib/editLock.js';
import { generateSigningKey, writeSigningKey } from './generateKey.js';
import {
  formatInstant,
  type KeySchedule,
  type KeySchedules,
  pickSigner,
  SCHEDULE_FILE,
  windowOf,
  writeKeySchedule,
} from './keySchedule.js';
import { readKeyDirectory } from './loadKeyRing.js';

export interface RotationTiming {
  readonly jwksMaxAgeSeconds: number;
  readonly clockSkewSeconds: number;
  /** The longest lifetime of a token we issue, seconds. */
  readonly maxLifetimeSeconds: number;
}

export interface RotationPlan {
  /** The whole new schedule, the new key's entry included. */
  readonly schedule: Map<string, KeySchedule>;
  readonly added: { readonly kid: string; readonly schedule: KeySchedule };
  /** Keys whose signing now ends, with their new schedule; the current signer first. */
  readonly retiring: readonly { readonly kid: string; readonly schedule: KeySchedule }[];
}

export interface RotationResult extends RotationPlan {
  /** The new key's algorithm. */
  readonly alg: SigningAlgorithm;
  readonly path: string;
}

export interface RotationOptions extends RotationTiming {
  /** The gateways' token.algorithm (which key signs now). */
  readonly algorithm: SigningAlgorithm;
  /** The new key's algorithm; default: the algorithm of the key that signs now. */
  readonly to?: SigningAlgorithm;
  readonly now: Date;
}

/** A rotation that must not happen now (exit 1, not a usage error). */
export class RotationRefused extends Error {
  override readonly name = 'RotationRefused';
}

/** The pure schedule arithmetic of a rotation at `now` (ms); throws `RotationRefused`. */
export function planRotation(input: {
  readonly keys: readonly { readonly kid: string; readonly alg: SigningAlgorithm }[];
  readonly schedule: KeySchedules;
  /** The gateways' token.algorithm. */
  readonly algorithm: SigningAlgorithm;
  /** The new key's algorithm (default `algorithm`). */
  readonly newAlgorithm?: SigningAlgorithm;
  readonly newKid: string;
  readonly now: number;
  readonly timing: RotationTiming;
}): RotationPlan {
  const { keys, schedule, algorithm, newKid, now, timing } = input;
  const newAlgorithm = input.newAlgorithm ?? algorithm;
  const window = (k: { kid: string }) => windowOf(schedule.get(k.kid));
  const pending = keys.find((k) => window(k).activateAt > now);
  if (pending !== undefined) {
    const at = formatInstant(window(pending).activateAt);
    throw new RotationRefused(
      `a rotation is already pending: ${pending.kid} activates at ${at} (see "portaria keys list")`,
    );
  }
  const signer = pickSigner(keys, window, algorithm, now);
  if (signer === undefined) {
    throw new RotationRefused(
      `no ${algorithm} key is active now to rotate from (create one with "portaria keys generate --alg ${algorithm}")`,
    );
  }
  if (schedule.has(newKid) || keys.some((k) => k.kid === newKid)) {
    throw new RotationRefused(`kid ${newKid} exists already`);
  }

  const skew = timing.clockSkewSeconds * 1000;
  const activateAt = now + timing.jwksMaxAgeSeconds * 1000 + skew;
  const removeAt = activateAt + timing.maxLifetimeSeconds * 1000 + skew;
  const next = new Map(schedule);
  const added = {
    kid: newKid,
    schedule: { publishAt: now, activateAt, retireAt: null, removeAt: null },
  };
  next.set(newKid, added.schedule);

  const retiring: { kid: string; schedule: KeySchedule }[] = [];
  // Whatever could sign now for either algorithm stops at the hand-over: left active, a
  // key of token.algorithm would keep signing on replicas still configured for it.
  const stillSigning = keys.filter((k) => {
    const w = window(k);
    const mine = k === signer || k.alg === algorithm || k.alg === newAlgorithm;
    return mine && w.activateAt <= now && now < w.retireAt;
  });
  for (const key of stillSigning) {
    const current = schedule.get(key.kid);
    // The signer hands over exactly at activateAt; other keys keep an earlier retirement.
    if (key !== signer && current?.retireAt != null) continue;
    const retired: KeySchedule = {
      publishAt: current?.publishAt ?? 0,
      activateAt: current?.activateAt ?? 0,
      retireAt: activateAt,
      removeAt: Math.max(current?.removeAt ?? removeAt, removeAt),
    };
    next.set(key.kid, retired);
    const entry = { kid: key.kid, schedule: retired };
    if (key === signer) retiring.unshift(entry);
    else retiring.push(entry);
  }
  return { schedule: next, added, retiring };
}

/** Rotates the keys in `dir` at `now`: generates the key, writes schedule and key file. */
export async function rotateKeys(dir: string, options: RotationOptions): Promise<RotationResult> {
  // Two rotations at once would each plan from the same schedule and the second write
  // would drop the first's entries, leaving a key file the schedule does not know.
  return withEditLock(join(dir, SCHEDULE_FILE), () => rotateLocked(dir, options));
}

async function rotateLocked(dir: string, options: RotationOptions): Promise<RotationResult> {
  const { keys, schedule } = await readKeyDirectory(dir, options.now.getTime());
  const window = (k: { kid: string }) => windowOf(schedule.get(k.kid));
  const signer = pickSigner(keys, window, options.algorithm, options.now.getTime());
  const newAlgorithm = options.to ?? signer?.alg ?? options.algorithm;
  const key = await generateSigningKey(newAlgorithm, options.now);
  const plan = planRotation({
    keys,
    schedule,
    algorithm: options.algorithm,
    newAlgorithm,
    newKid: key.kid,
    now: options.now.getTime(),
    timing: options,
  });
  await writeKeySchedule(dir, plan.schedule);
  let path: string;
  try {
    path = await writeSigningKey(dir, key);
  } catch (err) {
    await writeKeySchedule(dir, schedule);
    throw err;
  }
  return { ...plan, alg: newAlgorithm, path };
}
