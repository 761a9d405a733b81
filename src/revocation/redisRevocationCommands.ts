/**
 * The commands that move revocation entries between Redis and a replica: the full load
 * (`ZSCAN` of the sets, cut-offs by `ZMSCORE` a page at a time), what the replica holds
 * that Redis lacks, the batched writes, the generation, the heartbeat's check and the sweep. No state of its own: the store
 * decides when each runs.
 */
import type { RedisClient } from '../redis/redisClient.js';
import {
  EXPECT_MARGIN_S,
  HEARTBEAT_SCRIPT,
  MARKER_SCRIPT,
  type RevocationKeys,
  SWEEP_SCRIPT,
  WRITE_SCRIPT,
  writeArguments,
} from './redisRevocationLayout.js';
import { encodeRevocationRecord, type RevocationRecord } from './revocationLogRecord.js';
import type { RevocationEntries } from './revocationStore.js';

const SCAN_COUNT = 1000;
const WRITE_BATCH = 500;

/** What a full load found in Redis (live entries only). */
export interface HeldEntries {
  readonly tokens: Map<string, number>;
  readonly clients: Map<string, { issuedBefore: number; expiresAt: number }>;
}

/** Every live entry in Redis, each handed to `apply` (the in-memory copy) on the way. */
export async function loadLiveEntries(
  command: RedisClient,
  keys: RevocationKeys,
  now: number,
  apply: (record: RevocationRecord) => void,
): Promise<HeldEntries> {
  const tokens = new Map<string, number>();
  for await (const [tokenId, expiresAt] of scanSortedSet(command, keys.tokens)) {
    if (expiresAt < now) continue;
    tokens.set(tokenId, expiresAt);
    apply({ kind: 'token', tokenId, expiresAt });
  }
  const clients = new Map<string, { issuedBefore: number; expiresAt: number }>();
  const page: [string, number][] = [];
  const flush = async () => {
    if (page.length === 0) return;
    const cutoffs = await command.zmscore(keys.cutoffs, ...page.map(([id]) => id));
    page.forEach(([clientId, expiresAt], i) => {
      const cut = cutoffs[i];
      if (cut === null || cut === undefined) return;
      const issuedBefore = Number(cut);
      clients.set(clientId, { issuedBefore, expiresAt });
      apply({ kind: 'client', clientId, issuedBefore, expiresAt });
    });
    page.length = 0;
  };
  for await (const [clientId, expiresAt] of scanSortedSet(command, keys.clients)) {
    if (expiresAt < now) continue;
    page.push([clientId, expiresAt]);
    if (page.length >= SCAN_COUNT) await flush();
  }
  await flush();
  return { tokens, clients };
}

async function* scanSortedSet(command: RedisClient, key: string): AsyncGenerator<[string, number]> {
  let cursor = '0';
  do {
    const [next, flat] = await command.zscan(key, cursor, 'COUNT', SCAN_COUNT);
    for (let i = 0; i + 1 < flat.length; i += 2) {
      yield [flat[i] as string, Number(flat[i + 1])];
    }
    cursor = next;
  } while (cursor !== '0');
}

/** Live local entries Redis lacks or holds with an earlier expiry or cut-off. */
export function missingFrom(held: HeldEntries, local: RevocationEntries): RevocationRecord[] {
  const missing: RevocationRecord[] = [];
  for (const t of local.tokens) {
    if ((held.tokens.get(t.tokenId) ?? Number.NEGATIVE_INFINITY) < t.expiresAt) {
      missing.push({ kind: 'token', ...t });
    }
  }
  for (const c of local.clients) {
    const there = held.clients.get(c.clientId);
    if (
      there === undefined ||
      there.issuedBefore < c.issuedBefore ||
      there.expiresAt < c.expiresAt
    ) {
      missing.push({ kind: 'client', ...c });
    }
  }
  return missing;
}

/**
 * Writes and announces records, pipelined in batches (each command's timeout runs from
 * when it is sent, so one huge pipeline could time out); rejects if any failed. `fresh`:
 * the generation the running sync created (`WRITE_SCRIPT`), '' for every other write.
 */
export async function writeRecords(
  command: RedisClient,
  keys: RevocationKeys,
  records: readonly RevocationRecord[],
  fresh = '',
): Promise<void> {
  for (let i = 0; i < records.length; i += WRITE_BATCH) {
    await writeBatch(command, keys, records.slice(i, i + WRITE_BATCH), fresh);
  }
}

async function writeBatch(
  command: RedisClient,
  keys: RevocationKeys,
  records: readonly RevocationRecord[],
  fresh: string,
): Promise<void> {
  const pipeline = command.pipeline();
  for (const record of records) {
    const message = encodeRevocationRecord(record).slice(0, -1);
    pipeline.eval(
      WRITE_SCRIPT,
      4,
      keys.tokens,
      keys.clients,
      keys.cutoffs,
      keys.marker,
      ...writeArguments(record, keys.channel, message, fresh),
    );
  }
  const results = (await pipeline.exec()) ?? [];
  const failed = results.find(([error]) => error !== null);
  if (failed !== undefined || results.length !== records.length) {
    throw failed?.[0] ?? new Error('redis pipeline aborted');
  }
}

/** Removes the entries expired by `now` (s) from the sets. */
export async function sweepExpired(
  command: RedisClient,
  keys: RevocationKeys,
  now: number,
): Promise<void> {
  await command.eval(SWEEP_SCRIPT, 3, keys.tokens, keys.clients, keys.cutoffs, now);
}

/** The list's generation (`MARKER_SCRIPT`): the one in Redis, or `proposed` when absent. */
export async function readGeneration(
  command: RedisClient,
  keys: RevocationKeys,
  proposed: string,
): Promise<string> {
  return String(await command.eval(MARKER_SCRIPT, 1, keys.marker, proposed));
}

/**
 * Sends `HEARTBEAT_SCRIPT` (read its reply with `heartbeatLoss`); `tokenExpiry` and
 * `clientExpiry` are the latest expiries of the sets the replica expects, 0 for none.
 */
export function checkListWhole(
  command: RedisClient,
  keys: RevocationKeys,
  tokenExpiry: number,
  clientExpiry: number,
): Promise<unknown> {
  return command.eval(
    HEARTBEAT_SCRIPT,
    4,
    keys.marker,
    keys.tokens,
    keys.clients,
    keys.cutoffs,
    tokenExpiry,
    clientExpiry,
    EXPECT_MARGIN_S,
  );
}
