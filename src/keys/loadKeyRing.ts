/**
 * Loads the signing keys and their schedule from the keys directory.
 *
 * Each key is one file named after its kid:
 * - `<kid>.pem`: a PKCS#8 private key (`BEGIN PRIVATE KEY`); the algorithm follows from
 *   the key: P-256 → ES256, Ed25519 → EdDSA, RSA (`rsaEncryption`) → RS256, RSASSA-PSS
 *   (`id-RSASSA-PSS`, unrestricted or restricted to SHA-256 with MGF1-SHA-256) → PS256;
 *   RSA of 2048 bits or more (RFC 7518 §3.3, §3.5).
 * - `<kid>.jwk.json`: a private JWK (RFC 7517) with `alg`; its `kid`, when present,
 *   must equal the file's. An RSA JWK is RS256 or PS256 as its `alg` says.
 * A PS256 key is held in its RSASSA-PSS form restricted to PS256 (`rsaPssKey.ts`).
 * `schedule.json` (optional, see `keySchedule.ts`) says when each key is published,
 * signs, retires and leaves the JWKS. An entry for a kid without a key file is refused
 * (a rotation cut short between its two writes), unless its key was removed already
 * (`removeAt` ≤ now): a retired key's file may be deleted.
 * Other files (temporaries, dotfiles, READMEs) are ignored. Every problem is collected
 * and thrown as one `ConfigError`; nothing is half-loaded. `loadKeyRing` also requires a
 * key of the configured algorithm that is active at the clock's now; the ring keeps
 * reading that clock (pass the application's clock; the default is the system clock).
 */
import { createPrivateKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../config/configError.js';
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from '../config/types.js';
import { type Clock, systemClock } from '../lib/clock.js';
import { KeyRing, type LoadedKey } from './keyRing.js';
import { type KeySchedule, readKeySchedule, SCHEDULE_FILE } from './keySchedule.js';
import { ps256PrivateKey } from './rsaPssKey.js';

export const KID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

const PEM_SUFFIX = '.pem';
const JWK_SUFFIX = '.jwk.json';

/** The names of the keys directory this loader reads (what a reload watches for). */
export function isKeyDirectoryEntry(name: string): boolean {
  return name.endsWith(PEM_SUFFIX) || name.endsWith(JWK_SUFFIX) || name === SCHEDULE_FILE;
}
const MIN_RSA_BITS = 2048;
const PKCS8 = /^-----BEGIN PRIVATE KEY-----\r?\n[A-Za-z0-9+/=\r\n]+-----END PRIVATE KEY-----$/;

/** The JWK shape each algorithm requires (RFC 7518 §6, RFC 8037 §2). */
const JWK_SHAPE: Record<SigningAlgorithm, { kty: string; crv?: string }> = {
  ES256: { kty: 'EC', crv: 'P-256' },
  EdDSA: { kty: 'OKP', crv: 'Ed25519' },
  RS256: { kty: 'RSA' },
  PS256: { kty: 'RSA' },
};

export interface KeyDirectory {
  readonly keys: readonly LoadedKey[];
  readonly schedule: ReadonlyMap<string, KeySchedule>;
}

export async function loadKeyRing(
  dir: string,
  algorithm: SigningAlgorithm,
  clock: Clock = systemClock,
): Promise<KeyRing> {
  const { keys, schedule, problems } = await scanKeyDirectory(dir, clock.now());
  if (!keys.some((k) => k.alg === algorithm)) {
    // A PKCS#8 RSA key's OID decides RS256: the likeliest reason for no PS256 key.
    const hint =
      algorithm === 'PS256' && keys.some((k) => k.alg === 'RS256')
        ? ' (its RSA keys are "rsaEncryption" keys, which are RS256: a PS256 key is an RSASSA-PSS key, as "portaria keys generate --alg PS256" writes, or a JWK file with "alg": "PS256")'
        : '';
    problems.push(`token.algorithm: no ${algorithm} key in keys.dir ${dir}${hint}`);
  }
  if (problems.length > 0) throw new ConfigError(problems, `keys.dir (${dir})`);
  const ring = new KeyRing(keys, schedule, algorithm, clock);
  if (!ring.states().some((k) => k.state === 'active')) {
    throw new ConfigError(
      [
        `token.algorithm: no ${algorithm} key is active now in keys.dir ${dir} (see "portaria keys list")`,
      ],
      `keys.dir (${dir})`,
    );
  }
  return ring;
}

/**
 * The keys and schedule of a directory at `now` (ms), without requiring any of them to be
 * active. Entries of removed keys whose files are gone are left out of the schedule.
 */
export async function readKeyDirectory(dir: string, now: number): Promise<KeyDirectory> {
  const { keys, schedule, problems } = await scanKeyDirectory(dir, now);
  if (problems.length > 0) throw new ConfigError(problems, `keys.dir (${dir})`);
  return { keys, schedule };
}

async function scanKeyDirectory(
  dir: string,
  now: number,
): Promise<{ keys: LoadedKey[]; schedule: Map<string, KeySchedule>; problems: string[] }> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const problem =
      code === 'ENOENT'
        ? `keys.dir: ${dir} does not exist (create a key with "portaria keys generate --alg ES256")`
        : `keys.dir: ${dir}: cannot read (${code ?? 'error'})`;
    throw new ConfigError([problem], `keys.dir (${dir})`);
  }

  const problems: string[] = [];
  const keys: LoadedKey[] = [];
  /** Every kid with a key file, loadable or not (so a broken file is reported once). */
  const kids = new Map<string, string>();
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    const kind = name.endsWith(JWK_SUFFIX) ? 'jwk' : name.endsWith(PEM_SUFFIX) ? 'pem' : null;
    if (kind === null) continue;
    const kid = name.slice(0, -(kind === 'jwk' ? JWK_SUFFIX : PEM_SUFFIX).length);
    try {
      if (!KID_PATTERN.test(kid)) {
        throw new Error('the kid (file name before the suffix) must match [A-Za-z0-9._-]{1,64}');
      }
      const other = kids.get(kid);
      if (other !== undefined) throw new Error(`kid ${kid} is also used by ${other}`);
      kids.set(kid, name);
      const text = await readKeyFile(join(dir, name));
      const key = kind === 'pem' ? fromPem(text) : fromJwk(text, kid);
      keys.push({ kid, ...key });
    } catch (err) {
      problems.push(`keys.dir: ${name}: ${(err as Error).message}`);
    }
  }

  const { schedule, problems: scheduleProblems } = await readKeySchedule(dir);
  problems.push(...scheduleProblems);
  for (const [kid, entry] of schedule) {
    if (!kids.has(kid) && !(entry.removeAt !== null && entry.removeAt <= now)) {
      problems.push(
        `keys.dir (${dir})/schedule.json: keys.${kid}: no key file ${kid}.pem or ${kid}.jwk.json`,
      );
    }
  }
  // Only keys that loaded; entries for broken files are already reported via the file.
  const loaded = new Set(keys.map((k) => k.kid));
  for (const kid of [...schedule.keys()]) if (!loaded.has(kid)) schedule.delete(kid);
  return { keys, schedule, problems };
}

async function readKeyFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(code === 'EISDIR' ? 'is a directory' : `cannot read (${code ?? 'error'})`);
  }
}

function fromPem(text: string): { alg: SigningAlgorithm; privateKey: KeyObject } {
  if (!PKCS8.test(text.trim())) {
    throw new Error('must be a single unencrypted PKCS#8 private key ("BEGIN PRIVATE KEY")');
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: text, format: 'pem' });
  } catch {
    throw new Error('not a readable PKCS#8 private key');
  }
  const alg = algorithmOf(privateKey);
  return { alg, privateKey: alg === 'PS256' ? ps256PrivateKey(privateKey) : privateKey };
}

function fromJwk(text: string, kid: string): { alg: SigningAlgorithm; privateKey: KeyObject } {
  let jwk: unknown;
  try {
    jwk = JSON.parse(text);
  } catch {
    throw new Error('not valid JSON');
  }
  if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk)) {
    throw new Error('must be a JSON object (a private JWK)');
  }
  const fields = jwk as Record<string, unknown>;
  const alg = fields.alg;
  if (typeof alg !== 'string' || !(SIGNING_ALGORITHMS as readonly string[]).includes(alg)) {
    throw new Error(`"alg" must be one of ${SIGNING_ALGORITHMS.join(', ')}`);
  }
  const shape = JWK_SHAPE[alg as SigningAlgorithm];
  if (fields.kty !== shape.kty || (shape.crv !== undefined && fields.crv !== shape.crv)) {
    const want = shape.crv ? `kty "${shape.kty}" with crv "${shape.crv}"` : `kty "${shape.kty}"`;
    throw new Error(`${alg.startsWith('P') ? 'a' : 'an'} ${alg} key must have ${want}`);
  }
  if (fields.kid !== undefined && fields.kid !== kid) {
    throw new Error(`"kid" ${JSON.stringify(fields.kid)} differs from the file name's kid ${kid}`);
  }
  if (fields.use !== undefined && fields.use !== 'sig') throw new Error('"use" must be "sig"');
  if (typeof fields.d !== 'string') throw new Error('is not a private key (no "d")');
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: fields as JsonWebKey, format: 'jwk' });
  } catch {
    throw new Error('not a valid private JWK');
  }
  // An RSA JWK carries no PSS parameters: its "alg" says RS256 or PS256 (RFC 7518 §6.3).
  const derived = algorithmOf(privateKey, alg === 'PS256' ? 'PS256' : 'RS256');
  if (derived !== alg) throw new Error(`"alg" is ${alg} but the key is for ${derived}`);
  return { alg, privateKey: alg === 'PS256' ? ps256PrivateKey(privateKey) : privateKey };
}

/**
 * The one algorithm a key may sign with (`rsaAs` for a plain RSA key: RS256 from a PEM
 * file, the `alg` of a JWK file); refuses everything else.
 */
function algorithmOf(key: KeyObject, rsaAs: 'RS256' | 'PS256' = 'RS256'): SigningAlgorithm {
  const type = key.asymmetricKeyType;
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1') return 'ES256';
    throw new Error(`EC curve ${curve ?? 'unknown'} is not supported (only P-256, for ES256)`);
  }
  if (type === 'ed25519') return 'EdDSA';
  if (type === 'rsa' || type === 'rsa-pss') {
    const alg = type === 'rsa' ? rsaAs : 'PS256';
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits >= MIN_RSA_BITS) return alg;
    const kind = type === 'rsa' ? 'RSA' : 'RSASSA-PSS';
    throw new Error(
      `${kind} key of ${bits} bits is too short (at least ${MIN_RSA_BITS}, for ${alg})`,
    );
  }
  throw new Error(
    `key type ${type ?? 'unknown'} is not supported (P-256, Ed25519, RSA or RSASSA-PSS)`,
  );
}
