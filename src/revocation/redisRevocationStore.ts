/**
 * The revocation store shared by every replica through Redis (`revocation.store: redis`).
 * Lookups read an in-memory copy and never touch the network. The copy is filled by a full
 * load at start and after every reconnection, kept current by pub/sub, and only grows by
 * merging: entries leave it when they expire, never because Redis lacks them. After a full
 * load the store writes back every live entry Redis lacks or holds weaker, so nothing
 * acknowledged is lost while any replica still knows it.
 *
 * The list counts as synchronised at the start of the last full load that succeeded, and
 * at each heartbeat that finds the list whole and gets a PING answered on the subscriber
 * connection (the reply proves every message published before it was delivered);
 * `isStale()` is one clock read. The heartbeat also checks the list's generation and sets
 * (`redisRevocationLayout.ts`), so data Redis lost with the connections up starts a full
 * sync at once; entries lost while their set survives (a failover to a lagging replica)
 * are not detected.
 *
 * A revocation is enforced here at once, then written to Redis; when the write fails,
 * `whileRedisDown: queue` appends it to the durable queue (`revocationQueue.ts`) and
 * `refuse` rejects. With Redis known to be down, `refuse` rejects before enforcing it
 * anywhere. `open` waits at most `startWaitMs` for the first load; logs never carry the
 * Redis URL or password.
 */
import { randomUUID } from 'node:crypto';
import { type Clock, epochSeconds } from '../lib/clock.js';
import {
  createRedisClient,
  isRedisCluster,
  quitWithin,
  type RedisClient,
} from '../redis/redisClient.js';
import { MemoryRevocationStore } from './memoryRevocationStore.js';
import {
  checkListWhole,
  loadLiveEntries,
  missingFrom,
  readGeneration,
  sweepExpired,
  writeRecords,
} from './redisRevocationCommands.js';
import {
  EXPECT_MARGIN_S,
  heartbeatLoss,
  type LossReason,
  type RevocationKeys,
  revocationKeys,
} from './redisRevocationLayout.js';
import {
  type RedisRevocationState,
  type RedisRevocationStoreOptions,
  type RedisRole,
  RevocationNotStored,
  type StoreLog,
} from './redisRevocationOptions.js';
import {
  assertRevocationRecord,
  decodeRevocationLine,
  type RevocationRecord,
} from './revocationLogRecord.js';
import { RevocationQueue } from './revocationQueue.js';
import type { RevocationEntries, RevocationStore } from './revocationStore.js';

export {
  type RedisRevocationState,
  type RedisRevocationStoreOptions,
  type RedisRole,
  RevocationNotStored,
  type StoreLog,
} from './redisRevocationOptions.js';

export class RedisRevocationStore implements RevocationStore {
  readonly #options: RedisRevocationStoreOptions;
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
    this.#options = options;
    this.#clock = options.clock;
    this.#log = options.log ?? (() => {});
    this.#keys = revocationKeys(options.redis.keyPrefix, isRedisCluster(options.redis));
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
    try {
      await sweepExpired(this.#command, this.#keys, epochSeconds(this.#clock));
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
    const within = this.#options.redis.commandTimeoutMs;
    await Promise.all([quitWithin(this.#command, within), quitWithin(this.#subscriber, within)]);
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
      this.#options.heartbeatMs ??
      Math.max(50, Math.min(1000, this.#options.maxSyncLagSeconds * 250));
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
      const generation = await readGeneration(this.#command, this.#keys, proposed);
      const held = await loadLiveEntries(
        this.#command,
        this.#keys,
        epochSeconds(this.#clock),
        (record) => this.#apply(record),
      );
      const missing = missingFrom(held, this.#memory.entries());
      // Sets this write-back creates need not reset a generation created just now: every
      // other replica sees a new id anyway.
      await writeRecords(
        this.#command,
        this.#keys,
        missing,
        generation === proposed ? proposed : '',
      );
      await this.#queue.drop(queued);
      if (this.#epoch !== epoch || this.#closed)
        throw new Error('redis connection lost during sync');
      this.#synced = true;
      this.#generation = generation;
      // Steps run one at a time, so `started` is the latest; assigned, not max()ed, so a
      // wall clock that stepped back does not leave the last sync in the future.
      this.#lastSyncMs = started;
      this.#failing = false;
      this.#options.onSync?.('ok');
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
      this.#options.onSync?.('error');
      throw error;
    }
  }

  async #replayQueue(): Promise<void> {
    const records = this.#queue.records();
    await writeRecords(this.#command, this.#keys, records);
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
    const [reply] = await Promise.all([
      checkListWhole(this.#command, this.#keys, this.#expected('token'), this.#expected('client')),
      this.#subscriber.ping(),
    ]);
    if (!this.#synced || this.#epoch !== epoch) return;
    const lost = heartbeatLoss(reply, this.#generation);
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

  async #revoke(record: RevocationRecord): Promise<void> {
    if (this.#closed) throw new RevocationNotStored('revocation store is closed');
    assertRevocationRecord(record);
    const queue = this.#options.whileRedisDown === 'queue';
    const reachable = this.#command.status === 'ready';
    if (!reachable && !queue) {
      throw new RevocationNotStored('redis is unreachable: revocation refused');
    }
    this.#apply(record);
    if (reachable) {
      try {
        await writeRecords(this.#command, this.#keys, [record]);
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

  #apply(record: RevocationRecord): void {
    this.#memory.apply(record);
    if (record.expiresAt > this.#latest[record.kind]) this.#latest[record.kind] = record.expiresAt;
    this.#options.onApplied?.(record);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
