/**
 * A fake-clock walk through a key rotation, for the rotation tests.
 *
 * A keys directory starts with one key A (no schedule entry). Gateway replicas (each with
 * its own clock offset) load it; at T0 `rotateKeys` adds B and every replica reloads.
 * At every step the next replica signs a token with its ring's current signing key, and
 * every token issued so far that has not expired (by the verifier's clock) must verify:
 * - at every replica, through `verificationKey(kid)` and jose `jwtVerify`;
 * - at every third-party verifier, which fetches one replica's `jwksJson()`, keeps the
 *   copy until it is `cacheMaxAgeSeconds` old (it never refetches on an unknown kid) and
 *   verifies with jose `createLocalJWKSet` over its copy.
 * The replicas sign as the gateway does (`signJws`). A rotation may change the algorithm
 * (`from` → `to`), and the replicas may be reconfigured for `to` at some instant (a
 * restart with the new token.algorithm), each then loading the directory again.
 * Nothing sleeps. jose's answer for a (token, key) pair depends only on the key material
 * and the time claims, so it is computed once per token and key document (or ring key)
 * and reused; whether the key is there is checked at every step.
 */
import type { KeyObject } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import type { SigningAlgorithm } from '../../src/config/types.js';
import { generateSigningKey, writeSigningKey } from '../../src/keys/generateKey.js';
import type { KeyRing, KeyStateName } from '../../src/keys/keyRing.js';
import { loadKeyRing } from '../../src/keys/loadKeyRing.js';
import { type RotationResult, type RotationTiming, rotateKeys } from '../../src/keys/rotateKeys.js';
import { plainRsaPublicKey } from '../../src/keys/rsaPssKey.js';
import { signJws } from '../../src/keys/signJws.js';
import { type Clock, ManualClock } from '../../src/lib/clock.js';

export const T0 = Date.UTC(2026, 0, 1);
const SECOND = 1000;

export interface WalkOptions {
  /** What `keys rotate` is told. */
  readonly rotation: RotationTiming;
  /** How long third parties keep a fetched JWKS (the gateway's Cache-Control max-age). */
  readonly cacheMaxAgeSeconds: number;
  readonly tokenLifetimeSeconds: number;
  /** Leeway of every verifier for exp (the configured clock skew). */
  readonly verifierSkewSeconds: number;
  /** Clock offset of each replica, ms. */
  readonly replicaOffsetsMs: readonly number[];
  readonly stepMs: number;
  readonly startMs: number;
  readonly endMs: number;
  /** Instants the walk must also visit (each is visited at -1 ms, 0 and +1 ms). */
  readonly boundariesMs: readonly number[];
  /** First fetch of the third-party verifiers (one per replica each). */
  readonly verifierFirstFetchMs: readonly number[];
  /** The replicas' token.algorithm and the first key's (default ES256). */
  readonly from?: SigningAlgorithm;
  /** The algorithm `keys rotate` rotates to (default: `from`). */
  readonly to?: SigningAlgorithm;
  /** From this instant on (true time), the replicas run with token.algorithm `to`. */
  readonly reconfiguredAtMs?: number;
}

export interface WalkStep {
  readonly now: number;
  /** Signer of the token issued at this step. */
  readonly signer: string;
  /** Kids in replica 0's JWKS. */
  readonly published: readonly string[];
  /** Replica 0's states by kid. */
  readonly states: Readonly<Record<string, KeyStateName>>;
  /** Replica 0's `jwksJson()` is the same string instance as at the previous step. */
  readonly sameJwksJson: boolean;
}

export interface WalkReport {
  readonly a: string;
  readonly b: string;
  readonly rotation: RotationResult;
  readonly steps: readonly WalkStep[];
  readonly failures: readonly string[];
  /** Successful (token, verifier, step) checks. */
  readonly verified: number;
  readonly tokens: readonly {
    readonly kid: string;
    readonly alg: SigningAlgorithm;
    readonly iat: number;
    readonly exp: number;
  }[];
}

interface Token {
  readonly jwt: string;
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly iat: number;
  /** ms */
  readonly exp: number;
}

interface Replica {
  readonly clock: Clock;
  ring: KeyRing;
  generation: number;
}

interface Verifier {
  readonly firstFetch: number;
  /** The replica whose JWKS it fetches. */
  readonly source: number;
  copy?: { fetchedAt: number; json: string; keySet: ReturnType<typeof createLocalJWKSet> };
}

export async function walkRotation(t: TestContext, o: WalkOptions): Promise<WalkReport> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-rotation-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const from = o.from ?? 'ES256';
  const to = o.to ?? from;
  const a = await generateSigningKey(from, new Date(T0 - 30 * 86_400 * SECOND));
  await writeSigningKey(dir, a);
  let configured = from;

  const truth = new ManualClock(o.startMs);
  const replicas: Replica[] = [];
  for (const offset of o.replicaOffsetsMs) {
    const clock: Clock = { now: () => truth.now() + offset };
    replicas.push({ clock, ring: await loadKeyRing(dir, from, clock), generation: 0 });
  }
  // Every first-fetch time against every replica's JWKS.
  const verifiers: Verifier[] = o.verifierFirstFetchMs.flatMap((firstFetch) =>
    replicas.map((_, source) => ({ firstFetch, source })),
  );

  const times = new Set<number>();
  for (let now = o.startMs; now <= o.endMs; now += o.stepMs) times.add(now);
  for (const b of o.boundariesMs) {
    for (const offset of o.replicaOffsetsMs) for (const d of [-1, 0, 1]) times.add(b - offset + d);
  }
  const walk = [...times].filter((x) => x >= o.startMs && x <= o.endMs).sort((x, y) => x - y);

  // jose's verdict per key document (or replica ring) and token index.
  const memo = new Map<string, Map<number, Promise<string | null>>>();
  const check = (scope: string, token: number, run: () => Promise<unknown>) => {
    let byToken = memo.get(scope);
    if (byToken === undefined) {
      byToken = new Map();
      memo.set(scope, byToken);
    }
    let result = byToken.get(token);
    if (result === undefined) {
      result = run().then(
        () => null,
        (err: Error) => `${err.name}: ${err.message}`,
      );
      byToken.set(token, result);
    }
    return result;
  };

  const tokens: Token[] = [];
  const steps: WalkStep[] = [];
  const failures: string[] = [];
  let verified = 0;
  let rotation: RotationResult | undefined;
  let previousJson: string | undefined;
  const at = (ms: number) => `T0${ms >= T0 ? '+' : '-'}${Math.abs(ms - T0) / SECOND}s`;

  for (const [index, now] of walk.entries()) {
    truth.set(now);
    if (rotation === undefined && now >= T0) {
      rotation = await rotateKeys(dir, {
        algorithm: configured,
        to,
        now: new Date(T0),
        ...o.rotation,
      });
      for (const replica of replicas) {
        replica.ring = await loadKeyRing(dir, configured, replica.clock);
        replica.generation += 1;
      }
    }
    if (o.reconfiguredAtMs !== undefined && configured !== to && now >= o.reconfiguredAtMs) {
      configured = to;
      for (const replica of replicas) {
        replica.ring = await loadKeyRing(dir, configured, replica.clock);
        replica.generation += 1;
      }
    }
    for (const v of verifiers) {
      const due =
        v.copy === undefined
          ? now >= v.firstFetch
          : now - v.copy.fetchedAt >= o.cacheMaxAgeSeconds * SECOND;
      if (!due) continue;
      const json = (replicas[v.source] as Replica).ring.jwksJson();
      v.copy = { fetchedAt: now, json, keySet: createLocalJWKSet(JSON.parse(json)) };
    }

    const issuer = replicas[index % replicas.length] as Replica;
    let signer = '(none)';
    try {
      const key = issuer.ring.signingKey;
      signer = key.kid;
      const iat = Math.floor(issuer.clock.now() / SECOND);
      const exp = iat + o.tokenLifetimeSeconds;
      const header = b64({ alg: key.alg, kid: key.kid, typ: 'at+jwt' });
      const input = `${header}.${b64({ scope: 'walk', iat, exp })}`;
      const signature = signJws(key.alg, key.privateKey, Buffer.from(input));
      const jwt = `${input}.${signature.toString('base64url')}`;
      tokens.push({ jwt, kid: key.kid, alg: key.alg, iat, exp: exp * SECOND });
    } catch (err) {
      failures.push(
        `${at(now)}: replica ${index % replicas.length} cannot sign: ${(err as Error).message}`,
      );
    }

    const tolerance = o.verifierSkewSeconds;
    for (const [n, token] of tokens.entries()) {
      const label = `token ${n} (${token.kid.slice(-8)}, iat ${at(token.iat * SECOND)})`;
      for (const [r, replica] of replicas.entries()) {
        const local = replica.clock.now();
        if (local >= token.exp) continue;
        const key = replica.ring.verificationKey(token.kid);
        if (key === undefined) {
          failures.push(`${at(now)}: replica ${r} has no key for ${label}`);
          continue;
        }
        const error = await check(`replica ${r}.${replica.generation}`, n, () =>
          // jose takes no RSASSA-PSS KeyObject: the same RSA key, as the JWKS has it.
          jwtVerify(token.jwt, joseKey(key.key), {
            algorithms: [key.alg],
            currentDate: new Date(local),
            clockTolerance: tolerance,
          }),
        );
        if (error === null) verified += 1;
        else failures.push(`${at(now)}: replica ${r} refuses ${label}: ${error}`);
      }
      if (now >= token.exp) continue;
      for (const [i, v] of verifiers.entries()) {
        const copy = v.copy;
        if (copy === undefined) continue;
        const error = await check(copy.json, n, () =>
          jwtVerify(token.jwt, copy.keySet, {
            algorithms: [from, to],
            currentDate: new Date(now),
            clockTolerance: tolerance,
          }),
        );
        if (error === null) verified += 1;
        else
          failures.push(
            `${at(now)}: verifier ${i} (fetched ${at(copy.fetchedAt)}) refuses ${label}: ${error}`,
          );
      }
    }

    const ring = (replicas[0] as Replica).ring;
    const json = ring.jwksJson();
    steps.push({
      now,
      signer,
      published: ring.jwks().keys.map((k) => k.kid),
      states: Object.fromEntries(ring.states().map((k) => [k.kid, k.state])),
      sameJwksJson: json === previousJson,
    });
    previousJson = json;
  }
  if (rotation === undefined) throw new Error('the walk never reached T0');
  return {
    a: a.kid,
    b: rotation.added.kid,
    rotation,
    steps,
    failures,
    verified,
    tokens: tokens.map(({ kid, alg, iat, exp }) => ({ kid, alg, iat, exp })),
  };
}

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function joseKey(key: KeyObject): KeyObject {
  return key.asymmetricKeyType === 'rsa-pss' ? plainRsaPublicKey(key) : key;
}

/** When each kid changed state: `[[at, state], …]` per kid (ms relative to T0). */
export function transitions(steps: readonly WalkStep[]): Record<string, [number, KeyStateName][]> {
  const out: Record<string, [number, KeyStateName][]> = {};
  for (const step of steps) {
    for (const [kid, state] of Object.entries(step.states)) {
      const list = out[kid] ?? [];
      out[kid] = list;
      if (list.at(-1)?.[1] !== state) list.push([step.now - T0, state]);
    }
  }
  return out;
}
