/**
 * The signing key ring: every key in the keys directory with its schedule
 * (`keySchedule.ts`), read against an injected clock on every call, so the ring changes
 * signer and JWKS by itself as time passes and every replica reading the same directory
 * agrees without talking. It does not read files (`loadKeyRing`) nor decide schedules
 * (`rotateKeys`).
 *
 * The signer is, among the configured algorithm's keys with activateAt ≤ now < retireAt,
 * the one activated last (tie: greatest kid), or the key a rotation to another algorithm
 * handed signing to (`pickSigner`), else a 503 `no-active-key`; a key verifies
 * only while publishAt ≤ now < removeAt. The JWKS (RFC 7517) holds the public members of
 * every key published now, newest kid first. Both are cached per schedule segment (between
 * two boundaries) and returned as the same instances, so serving the JWKS never
 * re-serialises and a changed key set is an identity test.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import type { SigningAlgorithm } from '../config/types.js';
import { PortariaError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { deepFreeze } from '../lib/deepFreeze.js';
import { type KeySchedules, pickSigner, type Window, windowOf } from './keySchedule.js';
import { plainRsaPublicKey } from './rsaPssKey.js';

export interface LoadedKey {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly privateKey: KeyObject;
}

export interface SigningKey {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly privateKey: KeyObject;
}

export interface VerificationKey {
  readonly alg: SigningAlgorithm;
  readonly key: KeyObject;
}

/** A public JWK as published: only these members, all strings. */
export interface PublicJwk {
  readonly kty: string;
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly use: 'sig';
  readonly crv?: string;
  readonly x?: string;
  readonly y?: string;
  readonly n?: string;
  readonly e?: string;
}

export interface Jwks {
  readonly keys: readonly PublicJwk[];
}

export type KeyStateName = 'pending' | 'active' | 'retiring' | 'retired';

/** One key's state now. Times in ms since the epoch; null publishAt/activateAt: no schedule entry (since forever); null retireAt/removeAt: never. */
export interface KeyState {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly state: KeyStateName;
  readonly publishAt: number | null;
  readonly activateAt: number | null;
  readonly retireAt: number | null;
  readonly removeAt: number | null;
}

interface Entry {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly window: Window;
  readonly signing: SigningKey;
  readonly verification: VerificationKey;
  readonly jwk: PublicJwk;
}

/** A value that holds for `from ≤ now < until`. */
interface Segment<T> {
  readonly from: number;
  readonly until: number;
  readonly value: T;
}

const PUBLIC_MEMBERS = ['kty', 'crv', 'x', 'y', 'n', 'e'] as const;

export class KeyRing {
  /** Algorithms of the keys present (the verifier's allowlist for our own tokens). */
  readonly algorithms: ReadonlySet<string>;
  readonly #algorithm: SigningAlgorithm;
  readonly #clock: Clock;
  /** Newest kid first. */
  readonly #entries: readonly Entry[];
  readonly #byKid: ReadonlyMap<string, Entry>;
  readonly #publication: readonly number[];
  readonly #activation: readonly number[];
  #published: Segment<{ jwks: Jwks; json: string }> | undefined;
  #signer: Segment<Entry | undefined> | undefined;

  /** Throws when kids repeat or the schedule names a kid without a key (`loadKeyRing` reports those as config errors). */
  constructor(
    keys: readonly LoadedKey[],
    schedule: KeySchedules,
    algorithm: SigningAlgorithm,
    clock: Clock,
  ) {
    const sorted = [...keys].sort((a, b) => (a.kid < b.kid ? 1 : a.kid > b.kid ? -1 : 0));
    const byKid = new Map<string, Entry>();
    for (const { kid, alg, privateKey } of sorted) {
      if (byKid.has(kid)) throw new Error(`duplicate kid ${JSON.stringify(kid)}`);
      const key = createPublicKey(privateKey);
      byKid.set(kid, {
        kid,
        alg,
        window: windowOf(schedule.get(kid)),
        signing: Object.freeze({ kid, alg, privateKey }),
        verification: Object.freeze({ alg, key }),
        jwk: deepFreeze(publicJwk(key, kid, alg)),
      });
    }
    for (const kid of schedule.keys()) {
      if (!byKid.has(kid)) throw new Error(`schedule for unknown kid ${JSON.stringify(kid)}`);
    }
    this.#entries = [...byKid.values()];
    this.#byKid = byKid;
    this.#publication = boundaries(this.#entries, (w) => [w.publishAt, w.removeAt]);
    this.#activation = boundaries(this.#entries, (w) => [w.activateAt, w.retireAt]);
    this.#algorithm = algorithm;
    this.#clock = clock;
    this.algorithms = new Set<string>(sorted.map((k) => k.alg));
  }

  /** The key that signs now; a 503 `PortariaError` (reason `no-active-key`) when none may. */
  get signingKey(): SigningKey {
    const signer = this.#currentSigner(this.#clock.now());
    if (signer === undefined) {
      throw new PortariaError('service-unavailable', 'No signing key is active.', {
        reason: 'no-active-key',
      });
    }
    return signer.signing;
  }

  /** The public key for `kid` while it is published, else undefined. */
  verificationKey(kid: string): VerificationKey | undefined {
    const entry = this.#byKid.get(kid);
    if (entry === undefined) return undefined;
    const now = this.#clock.now();
    const { publishAt, removeAt } = entry.window;
    return publishAt <= now && now < removeAt ? entry.verification : undefined;
  }

  /** The keys published now; the same frozen object until a publishAt/removeAt passes. */
  jwks(): Jwks {
    return this.#currentPublication().jwks;
  }

  /** `JSON.stringify(jwks())`, the same string instance for as long as `jwks()` is. */
  jwksJson(): string {
    return this.#currentPublication().json;
  }

  /** Every key with its state now, newest kid first. */
  states(): KeyState[] {
    const now = this.#clock.now();
    const signer = this.#currentSigner(now);
    return this.#entries.map(({ kid, alg, window: w }) => ({
      kid,
      alg,
      state:
        now < w.activateAt
          ? 'pending'
          : now >= w.removeAt
            ? 'retired'
            : signer?.kid === kid
              ? 'active'
              : 'retiring',
      publishAt: finite(w.publishAt),
      activateAt: finite(w.activateAt),
      retireAt: finite(w.retireAt),
      removeAt: finite(w.removeAt),
    }));
  }

  /** Seconds since the signer's activateAt; null when none signs or it has no schedule. */
  activeKeyAgeSeconds(): number | null {
    const now = this.#clock.now();
    const at = this.#currentSigner(now)?.window.activateAt;
    // A key without a schedule entry is "active since forever" (stored as epoch 0): no age.
    return at === undefined || !Number.isFinite(at) || at <= 0 ? null : (now - at) / 1000;
  }

  /** Seconds until the active signing key retires; null when none is active or it never retires. */
  activeKeyRetiresInSeconds(): number | null {
    const now = this.#clock.now();
    const at = this.#currentSigner(now)?.window.retireAt;
    return at === undefined || !Number.isFinite(at) ? null : (at - now) / 1000;
  }

  #currentSigner(now: number): Entry | undefined {
    const cached = this.#signer;
    if (cached !== undefined && cached.from <= now && now < cached.until) return cached.value;
    const value = pickSigner(this.#entries, (e) => e.window, this.#algorithm, now);
    this.#signer = { ...segmentAt(this.#activation, now), value };
    return value;
  }

  #currentPublication(): { jwks: Jwks; json: string } {
    const now = this.#clock.now();
    const cached = this.#published;
    if (cached !== undefined && cached.from <= now && now < cached.until) return cached.value;
    const keys = this.#entries
      .filter(({ window: w }) => w.publishAt <= now && now < w.removeAt)
      .map((e) => e.jwk);
    const jwks = deepFreeze({ keys });
    const value = Object.freeze({ jwks, json: JSON.stringify(jwks) });
    this.#published = { ...segmentAt(this.#publication, now), value };
    return value;
  }
}

/** The finite boundary times, ascending, without repeats. */
function boundaries(entries: readonly Entry[], pick: (w: Window) => number[]): number[] {
  const times = new Set(entries.flatMap((e) => pick(e.window)).filter(Number.isFinite));
  return [...times].sort((a, b) => a - b);
}

/** The segment between the last boundary ≤ now and the first boundary > now. */
function segmentAt(sorted: readonly number[], now: number): { from: number; until: number } {
  let from = -Infinity;
  for (const t of sorted) {
    if (t > now) return { from, until: t };
    from = t;
  }
  return { from, until: Infinity };
}

function finite(ms: number): number | null {
  return Number.isFinite(ms) ? ms : null;
}

function publicJwk(key: KeyObject, kid: string, alg: SigningAlgorithm): PublicJwk {
  // Node exports no JWK of an RSASSA-PSS key; its JWK is the RSA key's (RFC 7518 §6.3).
  const exportable = key.asymmetricKeyType === 'rsa-pss' ? plainRsaPublicKey(key) : key;
  const exported = exportable.export({ format: 'jwk' }) as Record<string, unknown>;
  const jwk: Record<string, string> = {};
  for (const member of PUBLIC_MEMBERS) {
    const value = exported[member];
    if (typeof value === 'string') jwk[member] = value;
  }
  return { ...jwk, kid, alg, use: 'sig' } as PublicJwk;
}
