/**
 * The life cycle of each signing key, `schedule.json` in the keys directory: when it is
 * published, signs, retires and is removed. Every replica reads the same file and its own
 * clock, so all agree on the signer without talking. Times are milliseconds since the
 * epoch, "forever"/"never" are ±Infinity so comparisons need no special cases. This module
 * parses, validates and writes the file; it does not know key files nor plan rotations
 * (`rotateKeys.ts`).
 *
 *   { "keys": { "<kid>": { "publishAt": ISO, "activateAt": ISO,
 *                          "retireAt": ISO | null, "removeAt": ISO | null } } }
 *
 * publishAt ≤ activateAt ≤ retireAt ≤ removeAt; null is never, and a key that never
 * retires is never removed. A key file without an entry is published and active since
 * forever, so a directory without a schedule signs with its greatest kid, and any active
 * scheduled key wins over such keys.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SigningAlgorithm } from '../config/types.js';
import { replaceFile } from '../lib/atomicWrite.js';
import { keyFileModel } from './keyFileModel.js';

export const SCHEDULE_FILE = 'schedule.json';

/** One key's schedule as stored; milliseconds since the epoch, null for never. */
export interface KeySchedule {
  readonly publishAt: number;
  readonly activateAt: number;
  readonly retireAt: number | null;
  readonly removeAt: number | null;
}

/** Schedules by kid. */
export type KeySchedules = ReadonlyMap<string, KeySchedule>;

/** A schedule with "since forever" and "never" as -Infinity and +Infinity. */
export interface Window {
  readonly publishAt: number;
  readonly activateAt: number;
  readonly retireAt: number;
  readonly removeAt: number;
}

const FIELDS = ['publishAt', 'activateAt', 'retireAt', 'removeAt'] as const;
type Field = (typeof FIELDS)[number];

const ALWAYS: Window = Object.freeze({
  publishAt: -Infinity,
  activateAt: -Infinity,
  retireAt: Infinity,
  removeAt: Infinity,
});

export function windowOf(schedule: KeySchedule | undefined): Window {
  if (schedule === undefined) return ALWAYS;
  return {
    publishAt: schedule.publishAt,
    activateAt: schedule.activateAt,
    retireAt: schedule.retireAt ?? Infinity,
    removeAt: schedule.removeAt ?? Infinity,
  };
}

/**
 * The key that signs at `now` for a gateway whose token.algorithm is `algorithm`: among
 * its keys active now, the latest activateAt, then the greatest kid. Once a rotation has
 * handed signing over to another algorithm (a key of `algorithm` retired by its schedule,
 * and none is active), the same pick among the active keys that have a schedule entry,
 * whatever their algorithm: so the switch to another algorithm happens on every replica
 * by the clock, as any rotation does, before their token.algorithm is changed. A key
 * without an entry never signs for another algorithm than its own.
 */
export function pickSigner<K extends { readonly kid: string; readonly alg: SigningAlgorithm }>(
  keys: readonly K[],
  windows: (key: K) => Window,
  algorithm: SigningAlgorithm,
  now: number,
): K | undefined {
  let best: K | undefined;
  let bestAt = -Infinity;
  let successor: K | undefined;
  let successorAt = -Infinity;
  let handedOver = false;
  for (const key of keys) {
    const w = windows(key);
    if (key.alg === algorithm && w.retireAt <= now) handedOver = true;
    if (!(w.activateAt <= now && now < w.retireAt)) continue;
    if (key.alg === algorithm) {
      if (later(key, w.activateAt, best, bestAt)) {
        best = key;
        bestAt = w.activateAt;
      }
    } else if (Number.isFinite(w.activateAt) && later(key, w.activateAt, successor, successorAt)) {
      successor = key;
      successorAt = w.activateAt;
    }
  }
  return best ?? (handedOver ? successor : undefined);
}

function later<K extends { readonly kid: string }>(
  key: K,
  at: number,
  best: K | undefined,
  bestAt: number,
): boolean {
  return best === undefined || at > bestAt || (at === bestAt && key.kid > best.kid);
}

/**
 * Reads `<dir>/schedule.json`; a missing file is an empty schedule. Problems are
 * prefixed `keys.dir (<dir>)/schedule.json: `.
 */
export async function readKeySchedule(
  dir: string,
): Promise<{ schedule: Map<string, KeySchedule>; problems: string[] }> {
  const prefix = `keys.dir (${dir})/${SCHEDULE_FILE}: `;
  let text: string;
  try {
    text = await readFile(join(dir, SCHEDULE_FILE), 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { schedule: new Map(), problems: [] };
    const why = code === 'EISDIR' ? 'is a directory' : `cannot read (${code ?? 'error'})`;
    return { schedule: new Map(), problems: [`${prefix}${why}`] };
  }
  const { schedule, problems } = parseKeySchedule(text);
  return { schedule, problems: problems.map((p) => prefix + p) };
}

/** Parses and validates the file's text; problems are `keys.<kid>.<field>: …`. */
export function parseKeySchedule(text: string): {
  schedule: Map<string, KeySchedule>;
  problems: string[];
} {
  const schedule = new Map<string, KeySchedule>();
  const problems: string[] = [];
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return { schedule, problems: ['not valid JSON'] };
  }
  if (!isObject(doc)) return { schedule, problems: ['must be a JSON object with "keys"'] };
  for (const name of Object.keys(doc)) {
    if (name !== 'keys') problems.push(`${name}: unknown field (only "keys")`);
  }
  const keys = doc.keys;
  if (!isObject(keys)) {
    problems.push('keys: must be an object of schedules by kid');
    return { schedule, problems };
  }
  for (const [kid, entry] of Object.entries(keys)) {
    const parsed = parseEntry(entry, `keys.${kid}`, problems);
    if (parsed !== undefined) schedule.set(kid, parsed);
  }
  return { schedule, problems };
}

function parseEntry(entry: unknown, path: string, problems: string[]): KeySchedule | undefined {
  if (!isObject(entry)) {
    problems.push(`${path}: must be an object with ${FIELDS.join(', ')}`);
    return undefined;
  }
  const before = problems.length;
  for (const name of Object.keys(entry)) {
    if (!(FIELDS as readonly string[]).includes(name)) {
      problems.push(`${path}.${name}: unknown field (only ${FIELDS.join(', ')})`);
    }
  }
  const times: Partial<Record<Field, number | null>> = {};
  for (const field of FIELDS) {
    const nullable = field === 'retireAt' || field === 'removeAt';
    const value = entry[field];
    if (value === undefined && !nullable) {
      problems.push(`${path}.${field}: missing (an ISO 8601 date-time, 2026-01-01T00:00:00Z)`);
    } else if (value === undefined || value === null) {
      if (nullable) times[field] = null;
      else problems.push(`${path}.${field}: must be an ISO 8601 date-time, not null`);
    } else {
      const ms = typeof value === 'string' ? parseInstant(value) : undefined;
      if (ms === undefined) {
        const or = nullable ? ' or null' : '';
        problems.push(
          `${path}.${field}: must be an ISO 8601 date-time with a time zone (2026-01-01T00:00:00Z)${or}`,
        );
      } else {
        times[field] = ms;
      }
    }
  }
  if (problems.length > before) return undefined;
  const schedule = times as KeySchedule;
  problems.push(...orderProblems(schedule).map((p) => `${path}.${p}`));
  return problems.length > before ? undefined : schedule;
}

/** The ordering rules, as `<field>: …` problems. */
export function orderProblems(s: KeySchedule): string[] {
  const problems: string[] = [];
  if (s.activateAt < s.publishAt) {
    problems.push('activateAt: must not be before publishAt (publish ahead, then sign)');
  }
  if (s.retireAt !== null && s.retireAt < s.activateAt) {
    problems.push('retireAt: must not be before activateAt');
  }
  if (s.removeAt !== null) {
    if (s.retireAt === null) {
      problems.push(
        'removeAt: must be null while retireAt is null (a signing key stays published)',
      );
    } else if (s.removeAt < s.retireAt) {
      problems.push('removeAt: must not be before retireAt (its tokens must keep verifying)');
    }
  }
  return problems;
}

/**
 * Writes the whole schedule atomically (temporary file, fsync, rename), with the owner and
 * permissions of the schedule it replaces, or of the keys beside it for a first one.
 */
export async function writeKeySchedule(dir: string, schedule: KeySchedules): Promise<string> {
  return replaceFile(dir, SCHEDULE_FILE, serializeKeySchedule(schedule), await keyFileModel(dir));
}

export function serializeKeySchedule(schedule: KeySchedules): string {
  const kids = [...schedule.keys()].sort();
  // Object.fromEntries defines own properties, so even a kid "__proto__" is plain data.
  const keys = Object.fromEntries(
    kids.map((kid) => {
      const s = schedule.get(kid) as KeySchedule;
      return [
        kid,
        {
          publishAt: formatInstant(s.publishAt),
          activateAt: formatInstant(s.activateAt),
          retireAt: s.retireAt === null ? null : formatInstant(s.retireAt),
          removeAt: s.removeAt === null ? null : formatInstant(s.removeAt),
        },
      ];
    }),
  );
  return `${JSON.stringify({ keys }, null, 2)}\n`;
}

/** `2026-01-01T00:00:00Z` (milliseconds only when there are some). */
export function formatInstant(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,3})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;

/** Milliseconds for an RFC 3339 date-time with a zone; undefined for anything else. */
export function parseInstant(text: string): number | undefined {
  const m = INSTANT.exec(text);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as number[];
  // Date.parse rolls 2026-02-30 over to March; refuse fields out of range instead.
  const check = new Date(Date.UTC(year ?? 0, (month ?? 0) - 1, day ?? 0, hour, minute, second));
  if (
    check.getUTCMonth() !== (month ?? 0) - 1 ||
    check.getUTCDate() !== day ||
    check.getUTCHours() !== hour ||
    check.getUTCMinutes() !== minute ||
    check.getUTCSeconds() !== second
  ) {
    return undefined;
  }
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
