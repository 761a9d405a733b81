/**
 * The revocation store shared by every replica through Redis (`revocation.store: redis`).
 * Key layout and scripts: `redisRevocationLayout.ts`.
 *
 * Lookups never touch the network: `isRevoked` reads an in-memory copy (a
 * `MemoryRevocationStore`, O(1)). The copy is filled by a full load at start and after
 * every reconnection, and kept current by pub/sub: a revocation is written and announced
 * in one script, and every replica's subscriber connection applies the message (well
 * within 1 s). The copy only ever grows by merging (later cut-off, later expiry win);
 * entries leave it when they expire, never because Redis lacks them — after a full load
 * the store writes back every live entry Redis lacks or holds weaker (Redis restarted
 * without persistence, queued revocations), so nothing acknowledged is lost while any
 * replica still knows it.
 *
 * Data lost by Redis with the connections up (FLUSHALL, FLUSHDB, eviction of the sets
 * under a `volatile-*` or `allkeys-*` policy, a proxy that reconnected to an empty Redis)
 * is noticed by every replica that still knows entries, whoever rewrote what since. A
 * full sync reads the list's generation (a random id in the marker key, created by
 * whoever finds it absent) before loading; each heartbeat checks, in one script, that the
 * marker still holds that id and that every set this replica holds live entries for
 * (expiring more than `EXPECT_MARGIN_S` from now, by its clock and by Redis's: a set
 * about to expire is no loss) still exists. A missing or different id, or a missing set, starts a full sync at
 * once, which writes back every entry this replica knows. A heartbeat that finds a set
 * missing, and a write that creates a set, delete the marker: every other replica still
 * holding entries then sees a missing id, even once the set exists again
 * (`redisRevocationLayout.ts`). Not detected: entries lost while their set survives (a
 * failover to a Redis replica that lagged behind).
 *
 * Freshness: the list counts as synchronised at the start of the last full load that
 * succeeded, and again each time a heartbeat finds the list whole (above) and a PING on
 * the subscriber connection is answered while subscribed (a reply proves every message
 * published before the PING was delivered). The heartbeat runs every `heartbeatMs`
 * (default: a quarter of `maxSyncLagSeconds`, at most 1 s); a closed connection marks
 * the list unsynchronised until a full load succeeds again. `isStale()` (one clock read,
 * no allocation) is true once the last synchronisation is older than
 * `maxSyncLagSeconds` — and before the first load.
 *
 * Revocations: applied to the copy at once (enforced here even if storing fails), then
 * written to Redis; the promise resolves once Redis has it. When Redis is unreachable or
 * the write fails: `whileRedisDown: queue` appends the record to the durable queue
 * (fsynced) and resolves — the queue is replayed after reconnecting and at the next
 * start; `refuse` rejects (nothing acknowledged; when Redis is known to be down the
 * revocation is refused before it is applied anywhere).
 *
 * Start: `open` waits at most `startWaitMs` (default `redis.connectTimeoutMs`) for the
 * first full load, then returns either way; `state().loaded` says whether it happened.
 * Timers are unref'd; `close` ends both connections without waiting on a dead Redis.
 * Logs never carry the Redis URL or password (ioredis messages name host:port at most).
 */
import { randomUUID } from 'node:crypto';
import type { RedisConfig } from '../config/types.js';
import { type Clock, epochSeconds } from '../lib/clock.js';
import { createRedisClient, type RedisClient } from '../redis/redisClient.js';
import { MemoryRevocationStore } from './memoryRevocationStore.js';
import {
  HEARTBEAT_SCRIPT,
  MARKER_SCRIPT,
  type RevocationKeys,
  revocationKeys,
  SWEEP_SCRIPT,
  WRITE_SCRIPT,
  writeArguments,
} from './redisRevocationLayout.js';
import {
  assertRevocationRecord,
  decodeRevocationLine,
  encodeRevocationRecord,
  type RevocationRecord,
} from './revocationLogRecord.js';
import { RevocationQueue } from './revocationQueue.js';
import type { RevocationEntries, RevocationStore } from './revocationStore.js';

export type RedisRole = 'revocation' | 'revocation-subscriber';
export type StoreLog = (
  level: 'info' | 'warn' | 'error',
  event: string,
  detail: Record<string, unknown>,
) => void;

export interface RedisRevocationStoreOptions {
  readonly redis: RedisConfig;
  readonly clock: Clock;
  readonly maxSyncLagSeconds: number;
  readonly whileRedisDown: 'queue' | 'refuse';
  readonly queueFile: string;
  readonly log?: StoreLog;
  /** A full synchronisation ended (metrics). */
  readonly onSync?: (outcome: 'ok' | 'error') => void;
  /** Heartbeat and retry period; default min(1000, maxSyncLagSeconds × 250) ms. */
  readonly heartbeatMs?: number;
  /** How long `open` waits for the first full load; default `redis.connectTimeoutMs`. */
  readonly startWaitMs?: number;
}

export interface RedisRevocationState {
  /** A full load has succeeded once. */
  readonly loaded: boolean;
  /** The list is kept current now (subscribed, loaded since the last reconnection). */
  readonly synced: boolean;
  /** Seconds since the last synchronisation; null before the first. */
  readonly syncAgeSeconds: number | null;
  readonly stale: boolean;
  /** Revocations waiting in the queue file for Redis. */
  readonly queued: number;
  readonly connected: Readonly<Record<RedisRole, boolean>>;
}

/** Thrown (and turned into 503 by the admin API) when a revocation cannot be stored. */
export class RevocationNotStored extends Error {
  override readonly name = 'RevocationNotStored';
}

const SCAN_COUNT = 1000;
const WRITE_BATCH = 500;
/**
 * A replica expects a set in Redis only while it holds an entry of that kind expiring
 * more than this many seconds from now, by its own clock and by Redis's (which expires
 * the sets): a set's TTL is rounded up to the second, and a replica whose clock runs a
 * little ahead sweeps entries early, so a set about to expire is no evidence of loss.
 */
const EXPECT_MARGIN_S = 5;

/** Why a heartbeat found the list in Redis no longer the one this replica synchronised. */
type LossReason = 'marker-missing' | 'marker-replaced' | 'set-missing';

/** What a full load found in Redis (live entries only). */
interface Held {
  readonly tokens: Map<string, number>;
  readonly clients: Map<string, { issuedBefore: number; expiresAt: number }>;
}

export class RedisRevocationStore implements RevocationStore {
  readonly #o: RedisRevocationStoreOptions;
  readonly #clock: Clock;
  readonly #log: StoreLog;
  readonly #keys: RevocationKeys;
  readonly #maxLagMs: number;
  readonly #memory: MemoryRevocationStore;
  readonly #queue: RevocationQueue;
  readonly #command: RedisClient;
  readonly #subscriber: RedisClient;
  readonly #down: Record<RedisRole, boolean> = {
    revocation: false,
    'revocation-subscriber': false,
  };
  #timer: NodeJS.Timeout | undefined;
  #lastSyncMs = Number.NEGATIVE_INFINITY;
  /** The generation (marker value) of the last full sync that succeeded. */
  #generation: string | null = null;
  /** Why a heartbeat asked for the full sync still to succeed (its write-back is a loss). */
  #lost: LossReason | undefined;
  /** Latest expiry (s) of the token and of the client entries ever held: sets expected. */
  #latest = { token: 0, client: 0 };
  #loaded = false;
  #synced = false;
  /** Bumped on every connection close: a sync begun before it proves nothing. */
  #epoch = 0;
  #busy = false;
  #failing = false;
  #closed = false;
  #onFirstLoad: () => void = () => {};

  private constructor(options: RedisRevocationStoreOptions, queue: RevocationQueue) {
    this.#o = options;
    this.#clock = options.clock;
    this.#log = options.log ?? (() => {});
    this.#keys = revocationKeys(options.redis.keyPrefix);
    this.#maxLagMs = options.maxSyncLagSeconds * 1000;
    this.#memory = new MemoryRevocationStore(options.clock);
    this.#queue = queue;
    this.#command = createRedisClient(options.redis, { role: 'revocation' });
    this.#subscriber = createRedisClient(options.redis, { role: 'revocation-subscriber' });
  }

  /** Reads the queue left by an earlier run, connects, and waits briefly for the first load. */
  static async open(options: RedisRevocationStoreOptions): Promise<RedisRevocationStore> {
    const queue = await RevocationQueue.open(options.queueFile, (event, detail) =>
      options.log?.('warn', event, detail),
    );
    const store = new RedisRevocationStore(options, queue);
    const now = epochSeconds(options.clock);
    for (const record of queue.records()) if (record.expiresAt >= now) store.#apply(record);
    const loaded = new Promise<void>((resolve) => {
      store.#onFirstLoad = resolve;
    });
    store.#start();
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, options.startWaitMs ?? options.redis.connectTimeoutMs);
      timer.unref();
    });
    await Promise.race([loaded, waited]);
    clearTimeout(timer);
    return store;
  }

  isRevoked(token: { tokenId: string; clientId: string; issuedAt: number }): boolean {
    return this.#memory.isRevoked(token);
  }

  clientCutoff(clientId: string): number | undefined {
    return this.#memory.clientCutoff(clientId);
  }

  /**
   * True while the last synchronisation is older than `maxSyncLagSeconds` (or none yet),
   * and while it lies ahead of the clock (the wall clock stepped back): until the next
   * synchronisation, its age cannot be told.
   */
  isStale(): boolean {
    const age = this.#clock.now() - this.#lastSyncMs;
    return age > this.#maxLagMs || age < 0;
  }

  revokeToken(tokenId: string, expiresAt: number): Promise<void> {
    return this.#revoke({ kind: 'token', tokenId, expiresAt });
  }

  revokeClient(clientId: string, issuedBefore: number, expiresAt: number): Promise<void> {
    return this.#revoke({ kind: 'client', clientId, issuedBefore, expiresAt });
  }

  size(): number {
    return this.#memory.size();
  }

  entries(): RevocationEntries {
    return this.#memory.entries();
  }

  /** Forgets expired entries here and in Redis (when reachable). Never rejects. */
  async sweep(): Promise<void> {
    this.#memory.sweep();
    if (this.#closed || this.#command.status !== 'ready') return;
    const k = this.#keys;
    try {
      await this.#command.eval(
        SWEEP_SCRIPT,
        3,
        k.tokens,
        k.clients,
        k.cutoffs,
        epochSeconds(this.#clock),
      );
    } catch (error) {
      this.#log('warn', 'revocation sweep in redis failed', { error: messageOf(error) });
    }
  }

  state(): RedisRevocationState {
    const age = this.#clock.now() - this.#lastSyncMs;
    return {
      loaded: this.#loaded,
      synced: this.#synced,
      syncAgeSeconds: Number.isFinite(age) ? Math.max(0, age / 1000) : null,
      stale: age > this.#maxLagMs || age < 0,
      queued: this.#queue.size,
      connected: {
        revocation: this.#command.status === 'ready',
        'revocation-subscriber': this.#subscriber.status === 'ready',
      },
    };
  }

  /** Stops the heartbeat, waits for queue writes, ends both connections (bounded). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#onFirstLoad();
    await this.#queue.close();
    await Promise.all([this.#quit(this.#command), this.#quit(this.#subscriber)]);
  }

  #start(): void {
    this.#watch(this.#command, 'revocation');
    this.#watch(this.#subscriber, 'revocation-subscriber');
    this.#subscriber.on('message', (channel: string, message: string) => {
      if (channel !== this.#keys.channel) return;
      const record = decodeRevocationLine(message);
      if (record === undefined) {
        this.#log('warn', 'revocation message invalid', { channel });
        return;
      }
      this.#apply(record);
    });
    const heartbeatMs =
      this.#o.heartbeatMs ?? Math.max(50, Math.min(1000, this.#o.maxSyncLagSeconds * 250));
    this.#timer = setInterval(() => this.#tick(), heartbeatMs);
    this.#timer.unref();
    this.#command.connect().catch(() => {});
    this.#subscriber.connect().catch(() => {});
  }

  #watch(client: RedisClient, role: RedisRole): void {
    client.on('error', (error: unknown) => {
      if (this.#down[role] || this.#closed) return;
      this.#down[role] = true;
      this.#log('warn', 'redis connection failed', { role, error: messageOf(error) });
    });
    client.on('close', () => {
      this.#epoch += 1;
      this.#synced = false;
      if (this.#down[role] || this.#closed) return;
      this.#down[role] = true;
      this.#log('warn', 'redis connection lost', { role });
    });
    client.on('ready', () => {
      if (this.#down[role]) this.#log('info', 'redis connected', { role });
      this.#down[role] = false;
      this.#tick();
    });
  }

  #connected(): boolean {
    return this.#command.status === 'ready' && this.#subscriber.status === 'ready';
  }

  /** One heartbeat: a full sync when unsynchronised, else replay the queue or PING. */
  #tick(): void {
    if (this.#busy || this.#closed) return;
    // Unsynchronised and a connection still down: its 'ready' event ticks again.
    if (!this.#synced && !this.#connected()) return;
    this.#busy = true;
    const step = !this.#synced
      ? this.#sync()
      : this.#queue.size > 0
        ? this.#replayQueue()
        : this.#heartbeat();
    step
      .catch((error: unknown) => {
        if (this.#closed) return;
        this.#synced = false;
        if (!this.#failing) {
          this.#failing = true;
          this.#log('warn', 'revocation sync failed', { error: messageOf(error) });
        }
      })
      .finally(() => {
        this.#busy = false;
      });
  }

  /**
   * Subscribe, read (or create) the generation, load in full, write back what Redis lacks,
   * drop the replayed queue. The generation is read before the load: whatever Redis loses
   * after that changes it, so the next heartbeat notices.
   */
  async #sync(): Promise<void> {
    const epoch = this.#epoch;
    const started = this.#clock.now();
    const queued = this.#queue.size;
    try {
      await this.#subscriber.subscribe(this.#keys.channel);
      const proposed = randomUUID();
      const generation = String(
        await this.#command.eval(MARKER_SCRIPT, 1, this.#keys.marker, proposed),
      );
      const held = await this.#load();
      const missing = this.#missingFrom(held);
      // Sets this write-back creates need not reset a generation created just now: every
      // other replica sees a new id anyway.
      await this.#writeAll(missing, generation === proposed ? proposed : '');
      await this.#queue.drop(queued);
      if (this.#epoch !== epoch || this.#closed)
        throw new Error('redis connection lost during sync');
      this.#synced = true;
      this.#generation = generation;
      // Steps run one at a time, so `started` is the latest; assigned, not max()ed, so a
      // wall clock that stepped back does not leave the last sync in the future.
      this.#lastSyncMs = started;
      this.#failing = false;
      this.#o.onSync?.('ok');
      this.#log('info', 'revocation list synchronised', {
        entries: this.#memory.size(),
        fromRedis: held.tokens.size + held.clients.size,
        written: missing.length,
        replayed: queued,
        ms: Math.round(this.#clock.now() - started),
      });
      if (this.#lost !== undefined && missing.length > 0) {
        this.#log('warn', 'revocation entries missing from redis: written back', {
          reason: this.#lost,
          written: missing.length,
        });
      }
      this.#lost = undefined;
      if (!this.#loaded) {
        this.#loaded = true;
        this.#onFirstLoad();
      }
    } catch (error) {
      this.#o.onSync?.('error');
      throw error;
    }
  }

  async #replayQueue(): Promise<void> {
    const records = this.#queue.records();
    await this.#writeAll(records);
    await this.#queue.drop(records.length);
    this.#log('info', 'revocation queue replayed', { replayed: records.length });
  }

  /**
   * PING the subscriber and, in the same round trip, check the list in Redis is still the
   * one synchronised against (`HEARTBEAT_SCRIPT`); if not, synchronise in full at once.
   * The sets expected are those this replica held live entries for when the script was
   * sent (by its clock and by Redis's): each was in Redis by then (loaded, announced after
   * storing, or written earlier on this same connection — commands on one connection
   * run in order).
   */
  async #heartbeat(): Promise<void> {
    const epoch = this.#epoch;
    const sent = this.#clock.now();
    const k = this.#keys;
    const [reply] = await Promise.all([
      this.#command.eval(
        HEARTBEAT_SCRIPT,
        4,
        k.marker,
        k.tokens,
        k.clients,
        k.cutoffs,
        this.#expected('token'),
        this.#expected('client'),
        EXPECT_MARGIN_S,
      ),
      this.#subscriber.ping(),
    ]);
    if (!this.#synced || this.#epoch !== epoch) return;
    const [marker, setMissing] = reply as [string | null, number];
    const lost: LossReason | undefined =
      setMissing === 1
        ? 'set-missing'
        : marker === null
          ? 'marker-missing'
          : marker !== this.#generation
            ? 'marker-replaced'
            : undefined;
    if (lost === undefined) {
      this.#lastSyncMs = sent;
      return;
    }
    // Flushed, evicted, or rebuilt by another replica: the list in memory is still
    // current (pub/sub kept flowing), so it stays synced while the full sync writes back.
    this.#lost = lost;
    this.#log('info', 'revocation list in redis changed: synchronising in full', {
      reason: lost,
      entries: this.#memory.size(),
    });
    await this.#sync();
  }

  /**
   * The latest expiry of this kind's entries when one is live beyond the margin by this
   * replica's clock, else 0 (the script then checks it against Redis's clock). A replica
   * whose clock runs ahead counts (and sweeps) its entries expired before Redis does, and
   * would have nothing to write back.
   */
  #expected(kind: RevocationRecord['kind']): number {
    const latest = this.#latest[kind];
    return latest > epochSeconds(this.#clock) + EXPECT_MARGIN_S ? latest : 0;
  }

  /** Every live entry in Redis, merged into the in-memory copy on the way. */
  async #load(): Promise<Held> {
    const now = epochSeconds(this.#clock);
    const tokens = new Map<string, number>();
    for await (const [tokenId, expiresAt] of this.#scan(this.#keys.tokens)) {
      if (expiresAt < now) continue;
      tokens.set(tokenId, expiresAt);
      this.#apply({ kind: 'token', tokenId, expiresAt });
    }
    const clients = new Map<string, { issuedBefore: number; expiresAt: number }>();
    const page: [string, number][] = [];
    const flush = async () => {
      if (page.length === 0) return;
      const cutoffs = await this.#command.zmscore(this.#keys.cutoffs, ...page.map(([id]) => id));
      page.forEach(([clientId, expiresAt], i) => {
        const cut = cutoffs[i];
        if (cut === null || cut === undefined) return;
        const issuedBefore = Number(cut);
        clients.set(clientId, { issuedBefore, expiresAt });
        this.#apply({ kind: 'client', clientId, issuedBefore, expiresAt });
      });
      page.length = 0;
    };
    for await (const [clientId, expiresAt] of this.#scan(this.#keys.clients)) {
      if (expiresAt < now) continue;
      page.push([clientId, expiresAt]);
      if (page.length >= SCAN_COUNT) await flush();
    }
    await flush();
    return { tokens, clients };
  }

  async *#scan(key: string): AsyncGenerator<[string, number]> {
    let cursor = '0';
    do {
      const [next, flat] = await this.#command.zscan(key, cursor, 'COUNT', SCAN_COUNT);
      for (let i = 0; i + 1 < flat.length; i += 2) {
        yield [flat[i] as string, Number(flat[i + 1])];
      }
      cursor = next;
    } while (cursor !== '0');
  }

  /** Live local entries Redis lacks or holds with an earlier expiry or cut-off. */
  #missingFrom(held: Held): RevocationRecord[] {
    const missing: RevocationRecord[] = [];
    const { tokens, clients } = this.#memory.entries();
    for (const t of tokens) {
      if ((held.tokens.get(t.tokenId) ?? Number.NEGATIVE_INFINITY) < t.expiresAt) {
        missing.push({ kind: 'token', ...t });
      }
    }
    for (const c of clients) {
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

  async #revoke(record: RevocationRecord): Promise<void> {
    if (this.#closed) throw new RevocationNotStored('revocation store is closed');
    assertRevocationRecord(record);
    const queue = this.#o.whileRedisDown === 'queue';
    const reachable = this.#command.status === 'ready';
    if (!reachable && !queue) {
      throw new RevocationNotStored('redis is unreachable: revocation refused');
    }
    this.#apply(record);
    if (reachable) {
      try {
        await this.#writeAll([record]);
        return;
      } catch (error) {
        // Maybe stored, maybe not: enforced here regardless; a full sync follows.
        this.#synced = false;
        if (!queue) throw new RevocationNotStored(`redis write failed: ${messageOf(error)}`);
        this.#log('warn', 'revocation write to redis failed: queued', {
          error: messageOf(error),
        });
      }
    }
    await this.#queue.append(record);
  }

  /**
   * Writes and announces records, pipelined in batches (each command's timeout runs from
   * when it is sent, so one huge pipeline could time out); rejects if any failed. `fresh`:
   * the generation the running sync created (`WRITE_SCRIPT`), '' for every other write.
   */
  async #writeAll(records: readonly RevocationRecord[], fresh = ''): Promise<void> {
    for (let i = 0; i < records.length; i += WRITE_BATCH) {
      await this.#writeBatch(records.slice(i, i + WRITE_BATCH), fresh);
    }
  }

  async #writeBatch(records: readonly RevocationRecord[], fresh: string): Promise<void> {
    const k = this.#keys;
    const pipeline = this.#command.pipeline();
    for (const record of records) {
      const message = encodeRevocationRecord(record).slice(0, -1);
      pipeline.eval(
        WRITE_SCRIPT,
        4,
        k.tokens,
        k.clients,
        k.cutoffs,
        k.marker,
        ...writeArguments(record, k.channel, message, fresh),
      );
    }
    const results = (await pipeline.exec()) ?? [];
    const failed = results.find(([error]) => error !== null);
    if (failed !== undefined || results.length !== records.length) {
      throw failed?.[0] ?? new Error('redis pipeline aborted');
    }
  }

  #apply(record: RevocationRecord): void {
    this.#memory.apply(record);
    if (record.expiresAt > this.#latest[record.kind]) this.#latest[record.kind] = record.expiresAt;
  }

  /** QUIT when connected (bounded by the command timeout), then drop the socket regardless. */
  async #quit(client: RedisClient): Promise<void> {
    if (client.status === 'ready') {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.#o.redis.commandTimeoutMs);
        timer.unref();
      });
      await Promise.race([client.quit().catch(() => {}), bound]);
      clearTimeout(timer);
    }
    client.disconnect();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
