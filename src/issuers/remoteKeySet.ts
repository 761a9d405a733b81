/**
 * A trusted external issuer's key set fetched from its `jwksUri` (RFC 7517 §5), cached
 * with explicit semantics. Every decision reads the injected clock; timers only wake us.
 *
 *   fresh        while younger than cacheMaxAge; a background refresh at 80 % of it
 *   stale        the last good set serves until cacheMaxAge + maxStaleness, then `getKey`
 *                throws 503 `issuer-unavailable` (`issuer-keys-stale`; before any
 *                success `issuer-keys-missing`), after waiting for a fetch in flight
 *   failures     retried after min(backoffMax, backoffBase × 2^attempt) × (0.5 + random/2)
 *   unknown kid  outside `KID_SYNTAX`: null without a fetch; absent from a successful
 *                fetch: null for the cooldown; else it joins the fetch in flight, or
 *                starts one when none started within the cooldown
 *
 * Lookups and timers never start a second fetch while one is in flight (1,000 unknown
 * kids cost one fetch per cooldown); only `refreshNow()` does, for a reload that must see
 * the newest keys. Fetches are numbered, so an older, slower one never overwrites a newer
 * set. Keys named in token headers (`jku`, `x5u`, `jwk`) are never used (RFC 8725 §3.10).
 * One download: `jwksDownload.ts`.
 */
import type { IssuerConfig } from '../config/types.js';
import { PortariaError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { type ImportedKey, type IssuerKey, KID_SYNTAX } from './issuerJwks.js';
import {
  downloadJwks,
  type FetchOutcome,
  type JwksSource,
  messageOf,
  outcomeOf,
} from './jwksDownload.js';
import { backoffDelayMs, realTimer, type SetTimer } from './keySetTimers.js';

export { type FetchOutcome, MAX_JWKS_BYTES } from './jwksDownload.js';
export { backoffDelayMs, type SetTimer } from './keySetTimers.js';

export interface IssuerKeySetState {
  /** A key set is held and younger than cacheMaxAge + maxStaleness (readiness). */
  readonly usable: boolean;
  /**
   * Whole seconds since the held set was fetched; null before the first load, and always
   * for a key file (it never goes stale: no age to watch, no staleness alert).
   */
  readonly ageSeconds: number | null;
  readonly keys: number;
  /** The last failure (`outcome: detail`), null after a success. */
  readonly lastError: string | null;
}

export type FetchTrigger = 'startup' | 'scheduled' | 'unknown-kid' | 'retry';

export interface KeySetHooks {
  fetch?(issuerId: string, trigger: FetchTrigger, outcome: FetchOutcome): void;
  /** A download starts; the function returned (if any) is called with its outcome. */
  fetchStarted?(
    issuerId: string,
    trigger: FetchTrigger,
  ): ((outcome: FetchOutcome) => void) | undefined;
  /** Kids the issuer withdrew in a new key set (their tokens must stop verifying). */
  keysRemoved?(issuerId: string, kids: readonly string[]): void;
}

export type KeySetLog = (event: string, detail: Record<string, unknown>) => void;

export interface RemoteKeySetDeps {
  readonly clock: Clock;
  readonly hooks?: KeySetHooks;
  readonly fetch?: typeof fetch;
  readonly random?: () => number;
  readonly log?: KeySetLog;
  /** Retry backoff bounds (1 s and 60 s by default); tests shrink them. */
  readonly backoffBaseMs?: number;
  readonly backoffMaxMs?: number;
  /** One-shot timer (default: unref'd `setTimeout`); tests may fire it by hand. */
  readonly setTimer?: SetTimer;
}

/** Unknown kids remembered at most; the oldest is forgotten first. */
const MAX_NEGATIVE = 4096;
/** A background refresh is due at this fraction of cacheMaxAge. */
const REFRESH_AT = 0.8;

export function keysUnavailable(reason: 'issuer-keys-stale' | 'issuer-keys-missing') {
  return new PortariaError('issuer-unavailable', "The token issuer's keys are unavailable.", {
    reason,
  });
}

export class RemoteKeySet {
  readonly #config: IssuerConfig;
  readonly #source: JwksSource;
  readonly #clock: Clock;
  readonly #hooks: KeySetHooks | undefined;
  readonly #random: () => number;
  readonly #log: KeySetLog | undefined;
  readonly #backoffBaseMs: number;
  readonly #backoffMaxMs: number;
  readonly #setTimer: SetTimer;
  readonly #maxAgeMs: number;
  readonly #usableMs: number;
  readonly #cooldownMs: number;

  #keys: ReadonlyMap<string, ImportedKey> | null = null;
  #loadedAt = 0;
  #lastError: string | null = null;
  #lastFetchAt: number | null = null;
  #issued = 0;
  #applied = 0;
  #inFlight: Promise<boolean> | null = null;
  readonly #controllers = new Set<AbortController>();
  readonly #negative = new Map<string, number>();
  #attempt = 0;
  #cancelRefresh: (() => void) | null = null;
  #cancelRetry: (() => void) | null = null;
  #closed = false;
  #markReady!: () => void;
  readonly #ready = new Promise<void>((resolve) => {
    this.#markReady = resolve;
  });

  constructor(config: IssuerConfig, deps: RemoteKeySetDeps) {
    if (config.jwksUri === null) throw new Error(`issuer ${config.id} has no jwksUri`);
    this.#config = config;
    this.#source = {
      issuerId: config.id,
      uri: config.jwksUri,
      algorithms: config.algorithms,
      fetch: deps.fetch ?? globalThis.fetch,
      log: deps.log,
      timeoutMs: config.fetchTimeoutMs,
    };
    this.#clock = deps.clock;
    this.#hooks = deps.hooks;
    this.#random = deps.random ?? Math.random;
    this.#log = deps.log;
    this.#backoffBaseMs = deps.backoffBaseMs ?? 1000;
    this.#backoffMaxMs = deps.backoffMaxMs ?? 60_000;
    this.#setTimer = deps.setTimer ?? realTimer;
    this.#maxAgeMs = config.cacheMaxAgeSeconds * 1000;
    this.#usableMs = (config.cacheMaxAgeSeconds + config.maxStalenessSeconds) * 1000;
    this.#cooldownMs = config.cooldownSeconds * 1000;
  }

  /** Remote sets have nothing to load at start: an issuer being down is not a config error. */
  load(): Promise<void> {
    return Promise.resolve();
  }

  start(): void {
    if (this.#closed || this.#issued > 0) return;
    void this.#startFetch('startup');
  }

  ready(): Promise<void> {
    return this.#ready;
  }

  state(): IssuerKeySetState {
    const now = this.#clock.now();
    return {
      usable: this.#usable(now),
      ageSeconds: this.#keys === null ? null : Math.floor((now - this.#loadedAt) / 1000),
      keys: this.#keys?.size ?? 0,
      lastError: this.#lastError,
    };
  }

  close(): void {
    this.#closed = true;
    this.#cancelRefresh?.();
    this.#cancelRetry?.();
    this.#cancelRefresh = this.#cancelRetry = null;
    for (const controller of this.#controllers) controller.abort(new Error('key set closed'));
  }

  /** Fetches now even when a fetch is in flight; resolves true when it succeeded. */
  refreshNow(trigger: FetchTrigger = 'scheduled'): Promise<boolean> {
    return this.#startFetch(trigger);
  }

  getKey(kid: string, alg: string): IssuerKey | null | Promise<IssuerKey | null> {
    const now = this.#clock.now();
    if (!this.#usable(now)) {
      if (this.#inFlight !== null) return this.#inFlight.then(() => this.#lookup(kid, alg, false));
      throw this.#unavailable();
    }
    this.#revalidate(now);
    const key = this.#keys?.get(kid);
    if (key !== undefined) return key.alg === alg ? key : null;
    if (!KID_SYNTAX.test(kid)) return null;
    const negativeUntil = this.#negative.get(kid);
    if (negativeUntil !== undefined) {
      if (negativeUntil > now) return null;
      this.#negative.delete(kid);
    }
    let pending = this.#inFlight;
    if (pending === null) {
      if (this.#lastFetchAt !== null && now - this.#lastFetchAt < this.#cooldownMs) return null;
      pending = this.#startFetch('unknown-kid');
    }
    return pending.then((ok) => this.#lookup(kid, alg, ok));
  }

  #lookup(kid: string, alg: string, remember: boolean): IssuerKey | null {
    const now = this.#clock.now();
    if (!this.#usable(now)) throw this.#unavailable();
    const key = this.#keys?.get(kid);
    if (key !== undefined) return key.alg === alg ? key : null;
    if (remember && KID_SYNTAX.test(kid)) {
      if (this.#negative.size >= MAX_NEGATIVE) {
        const oldest = this.#negative.keys().next();
        if (oldest.done !== true) this.#negative.delete(oldest.value);
      }
      this.#negative.set(kid, now + this.#cooldownMs);
    }
    return null;
  }

  #usable(now: number): boolean {
    return this.#keys !== null && now - this.#loadedAt < this.#usableMs;
  }

  #unavailable(): PortariaError {
    return keysUnavailable(this.#keys === null ? 'issuer-keys-missing' : 'issuer-keys-stale');
  }

  /** Past max age with nothing under way (a timer lost or late): refresh in the background. */
  #revalidate(now: number): void {
    if (now - this.#loadedAt < this.#maxAgeMs) return;
    if (this.#inFlight !== null || this.#cancelRetry !== null || this.#closed) return;
    if (this.#lastFetchAt !== null && now - this.#lastFetchAt < this.#cooldownMs) return;
    void this.#startFetch('scheduled');
  }

  #startFetch(trigger: FetchTrigger): Promise<boolean> {
    const seq = ++this.#issued;
    this.#lastFetchAt = this.#clock.now();
    const controller = new AbortController();
    this.#controllers.add(controller);
    const ended = this.#hooks?.fetchStarted?.(this.#config.id, trigger);
    const promise: Promise<boolean> = this.#fetchOnce(
      seq,
      trigger,
      controller.signal,
      ended,
    ).finally(() => {
      this.#controllers.delete(controller);
      if (this.#inFlight === promise) this.#inFlight = null;
    });
    this.#inFlight = promise;
    return promise;
  }

  async #fetchOnce(
    seq: number,
    trigger: FetchTrigger,
    closed: AbortSignal,
    ended: ((outcome: FetchOutcome) => void) | undefined,
  ): Promise<boolean> {
    const id = this.#config.id;
    let keys: Map<string, ImportedKey>;
    try {
      keys = await downloadJwks(this.#source, closed);
    } catch (error) {
      const outcome = outcomeOf(error);
      const message = `${outcome}: ${messageOf(error)}`;
      this.#log?.('issuer keys fetch failed', { issuer: id, trigger, outcome, error: message });
      if (seq > this.#applied) this.#lastError = message;
      if (seq === this.#issued) this.#scheduleRetry();
      ended?.(outcome);
      this.#hooks?.fetch?.(id, trigger, outcome);
      return false;
    }
    if (seq <= this.#applied) {
      this.#log?.('issuer keys result discarded', {
        issuer: id,
        trigger,
        seq,
        applied: this.#applied,
      });
      ended?.('ok');
      this.#hooks?.fetch?.(id, trigger, 'ok');
      return true;
    }
    const previous = this.#keys;
    this.#applied = seq;
    this.#keys = keys;
    this.#loadedAt = this.#clock.now();
    this.#lastError = null;
    this.#attempt = 0;
    this.#cancelRetry?.();
    this.#cancelRetry = null;
    this.#log?.('issuer keys fetched', { issuer: id, trigger, keys: keys.size });
    this.#scheduleRefresh();
    this.#markReady();
    // A kid that left the set, or now names another key (replaced after a compromise):
    // either way the tokens verified with the old key must not stay cached.
    const removed =
      previous === null
        ? []
        : [...previous]
            .filter(([kid, key]) => keys.get(kid)?.material !== key.material)
            .map(([kid]) => kid);
    if (removed.length > 0) this.#hooks?.keysRemoved?.(id, removed);
    ended?.('ok');
    this.#hooks?.fetch?.(id, trigger, 'ok');
    return true;
  }

  #scheduleRefresh(): void {
    this.#cancelRefresh?.();
    this.#cancelRefresh = null;
    if (this.#closed) return;
    const due = this.#loadedAt + this.#maxAgeMs * REFRESH_AT;
    this.#cancelRefresh = this.#setTimer(
      () => {
        this.#cancelRefresh = null;
        if (this.#closed) return;
        if (this.#clock.now() < due) this.#scheduleRefresh();
        else if (this.#inFlight === null) void this.#startFetch('scheduled');
      },
      Math.max(0, due - this.#clock.now()),
    );
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#cancelRetry !== null) return;
    const delay = backoffDelayMs(
      this.#attempt++,
      this.#backoffBaseMs,
      this.#backoffMaxMs,
      this.#random,
    );
    this.#cancelRetry = this.#setTimer(() => {
      this.#cancelRetry = null;
      if (!this.#closed && this.#inFlight === null) void this.#startFetch('retry');
    }, delay);
  }
}
