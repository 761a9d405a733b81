/**
 * A trusted external issuer's key set fetched from its `jwksUri` (RFC 7517 §5).
 *
 * Fetch: `GET jwksUri` with a hard timeout (`fetchTimeoutMs`, the body included),
 * `accept: application/json`, redirects refused (a redirect is an error, never
 * followed); only a 200 counts; the body is read incrementally and abandoned past
 * 256 KiB (`too-large`); it must be a JSON object with a `keys` array (else `invalid`),
 * imported by the JWK rules of `issuerJwks.ts` (skipped keys are logged). A set with no
 * usable key is `invalid` and the previous set is kept.
 *
 * Freshness (every decision reads the injected clock; timers only wake us up):
 * - age = now − completion of the last applied fetch. Fresh while age < cacheMaxAge;
 *   a background refresh is armed for 80 % of cacheMaxAge (when it fires early by the
 *   clock it re-arms for the rest). A lookup that finds the set past cacheMaxAge with
 *   nothing in flight, no retry pending and the cooldown passed also starts one.
 * - Stale-if-error: while fetches fail the last good set keeps serving until
 *   age ≥ cacheMaxAge + maxStaleness; then `getKey` throws a 503 `PortariaError`
 *   (`issuer-unavailable`, reason `issuer-keys-stale`); before any success, reason
 *   `issuer-keys-missing`. A lookup on an unusable set first waits for a fetch in flight.
 * - After a failed fetch, a retry after min(backoffMax, backoffBase × 2^attempt) ×
 *   (0.5 + random/2) (1 s, 60 s by default; attempt resets on success).
 *
 * Unknown `kid` (a rotation at the issuer): a `kid` outside 1–128 of [A-Za-z0-9._:-] is
 * refused (null) without a fetch; a `kid` that a successful fetch did not contain is
 * remembered for cooldownSeconds (null at once, even while a fetch is in flight);
 * otherwise a fetch in flight is joined, or one is started when no fetch started within
 * cooldownSeconds, and the set is read again after it; else null. Lookups and timers
 * never start a second fetch while one is in flight (1,000 unknown kids → one fetch per
 * cooldown); only `refreshNow()` does (a reload that must see the newest keys). Every
 * fetch is numbered and a result is applied only if newer than the last applied one, so
 * an older, slower fetch never overwrites a newer set.
 *
 * Every outcome goes to `hooks.fetch(issuerId, trigger, outcome)`; `state()` feeds
 * readiness (usable) and the age and key-count gauges. `close()` cancels the timers and
 * aborts fetches in flight. Keys named in token headers (`jku`, `x5u`, `jwk`) are never
 * used (RFC 8725 §3.10): the only source is the configured URI.
 */
import type { IssuerConfig } from '../config/types.js';
import { PortariaError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import {
  type ImportedKey,
  type IssuerKey,
  importJwks,
  KID_SYNTAX,
  skippedSummary,
} from './issuerJwks.js';

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
export type FetchOutcome = 'ok' | 'error' | 'timeout' | 'too-large' | 'invalid';

export interface KeySetHooks {
  fetch?(issuerId: string, trigger: FetchTrigger, outcome: FetchOutcome): void;
  /** Kids the issuer withdrew in a new key set (their tokens must stop verifying). */
  keysRemoved?(issuerId: string, kids: readonly string[]): void;
}

export type KeySetLog = (event: string, detail: Record<string, unknown>) => void;

/** Arms a one-shot timer and returns its cancel function (injectable for tests). */
export type SetTimer = (callback: () => void, delayMs: number) => () => void;

export interface RemoteKeySetDeps {
  readonly clock: Clock;
  readonly hooks?: KeySetHooks;
  readonly fetch?: typeof fetch;
  readonly random?: () => number;
  readonly log?: KeySetLog;
  readonly backoffBaseMs?: number;
  readonly backoffMaxMs?: number;
  readonly setTimer?: SetTimer;
}

export const MAX_JWKS_BYTES = 256 * 1024;
/** RFC 7515 leaves `kid` free-form; we accept a conservative, log-safe subset. */
const MAX_NEGATIVE = 4096;
const REFRESH_AT = 0.8;
const MAX_TIMER_MS = 2 ** 31 - 1;

const realTimer: SetTimer = (callback, delayMs) => {
  const timer = setTimeout(callback, Math.min(delayMs, MAX_TIMER_MS));
  timer.unref();
  return () => clearTimeout(timer);
};

/** Jittered exponential backoff: min(max, base × 2^attempt) × (0.5 + random/2). */
export function backoffDelayMs(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number,
): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30)) * (0.5 + random() / 2);
}

export function keysUnavailable(reason: 'issuer-keys-stale' | 'issuer-keys-missing') {
  return new PortariaError('issuer-unavailable', "The token issuer's keys are unavailable.", {
    reason,
  });
}

class FetchFailure extends Error {
  readonly outcome: FetchOutcome;
  constructor(outcome: FetchOutcome, message: string) {
    super(message);
    this.outcome = outcome;
  }
}

export class RemoteKeySet {
  readonly #config: IssuerConfig;
  readonly #uri: string;
  readonly #clock: Clock;
  readonly #hooks: KeySetHooks | undefined;
  readonly #fetch: typeof fetch;
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
    this.#uri = config.jwksUri;
    this.#clock = deps.clock;
    this.#hooks = deps.hooks;
    this.#fetch = deps.fetch ?? globalThis.fetch;
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
    const promise: Promise<boolean> = this.#fetchOnce(seq, trigger, controller.signal).finally(
      () => {
        this.#controllers.delete(controller);
        if (this.#inFlight === promise) this.#inFlight = null;
      },
    );
    this.#inFlight = promise;
    return promise;
  }

  async #fetchOnce(seq: number, trigger: FetchTrigger, closed: AbortSignal): Promise<boolean> {
    const id = this.#config.id;
    let keys: Map<string, ImportedKey>;
    try {
      keys = await this.#download(
        AbortSignal.any([closed, AbortSignal.timeout(this.#config.fetchTimeoutMs)]),
      );
    } catch (error) {
      const outcome = outcomeOf(error);
      const message = `${outcome}: ${messageOf(error)}`;
      this.#log?.('issuer keys fetch failed', { issuer: id, trigger, outcome, error: message });
      if (seq > this.#applied) this.#lastError = message;
      if (seq === this.#issued) this.#scheduleRetry();
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
    this.#hooks?.fetch?.(id, trigger, 'ok');
    return true;
  }

  async #download(signal: AbortSignal): Promise<Map<string, ImportedKey>> {
    const response = await this.#fetch(this.#uri, {
      signal,
      headers: { accept: 'application/json' },
      redirect: 'error',
    });
    if (response.status !== 200) {
      await response.body?.cancel().catch(() => undefined);
      throw new FetchFailure('error', `HTTP ${response.status}`);
    }
    const text = await readBounded(response, MAX_JWKS_BYTES);
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      throw new FetchFailure('invalid', 'the body is not JSON');
    }
    const imported = await importJwks(document, this.#config.algorithms);
    if (imported === null) throw new FetchFailure('invalid', 'not an object with a "keys" array');
    if (imported.skipped.length > 0) {
      this.#log?.('issuer keys skipped', {
        issuer: this.#config.id,
        ...skippedSummary(imported.skipped),
      });
    }
    if (imported.keys.size === 0) throw new FetchFailure('invalid', 'no usable key');
    return imported.keys;
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

/** Reads the body as UTF-8, abandoning it once more than `limit` bytes arrived. */
async function readBounded(response: Response, limit: number): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > limit) {
    await response.body?.cancel().catch(() => undefined);
    throw new FetchFailure('too-large', `body over ${limit} bytes`);
  }
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw new FetchFailure('too-large', `body over ${limit} bytes`);
    }
    chunks.push(value);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new FetchFailure('invalid', 'the body is not UTF-8');
  }
}

function outcomeOf(error: unknown): FetchOutcome {
  if (error instanceof FetchFailure) return error.outcome;
  if (error instanceof Error && error.name === 'TimeoutError') return 'timeout';
  return 'error';
}

function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  if (typeof cause?.code === 'string') return `${error.message} (${cause.code})`;
  if (typeof cause?.message === 'string') return `${error.message} (${cause.message})`;
  return error.message;
}
