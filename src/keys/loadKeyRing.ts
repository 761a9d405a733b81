/**
 * Loads the signing keys from the keys directory.
 *
 * Each key is one file named after its kid:
 * - `<kid>.pem`: a PKCS#8 private key (`BEGIN PRIVATE KEY`); the algorithm follows from
 *   the key: P-256 → ES256, Ed25519 → EdDSA, RSA of 2048 bits or more → RS256.
 * - `<kid>.jwk.json`: a private JWK (RFC 7517) with `alg`; its `kid`, when present,
 *   must equal the file's.
 * Other files (temporaries, dotfiles, READMEs) are ignored. Every problem is collected
 * and thrown as one `ConfigError`; nothing is half-loaded.
 */
import { createPrivateKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../config/configError.js';
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from '../config/types.js';
import { KeyRing, type LoadedKey } from './keyRing.js';

export const KID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

const PEM_SUFFIX = '.pem';
const JWK_SUFFIX = '.jwk.json';
const MIN_RSA_BITS = 2048;
const PKCS8 = /^-----BEGIN PRIVATE KEY-----\r?\n[A-Za-z0-9+/=\r\n]+-----END PRIVATE KEY-----$/;

/** The JWK shape each algorithm requires (RFC 7518 §6, RFC 8037 §2). */
const JWK_SHAPE: Record<SigningAlgorithm, { kty: string; crv?: string }> = {
  ES256: { kty: 'EC', crv: 'P-256' },
  EdDSA: { kty: 'OKP', crv: 'Ed25519' },
  RS256: { kty: 'RSA' },
};

export async function loadKeyRing(dir: string, algorithm: SigningAlgorithm): Promise<KeyRing> {
  const source = `keys.dir (${dir})`;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new ConfigError(
        [
          `keys.dir: ${dir} does not exist (create a key with "portaria keys generate --alg ES256")`,
        ],
        source,
      );
    }
    throw new ConfigError([`keys.dir: ${dir}: cannot read (${code ?? 'error'})`], source);
  }

  const problems: string[] = [];
  const keys: LoadedKey[] = [];
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
      const text = await readKeyFile(join(dir, name));
      const key = kind === 'pem' ? fromPem(text) : fromJwk(text, kid);
      kids.set(kid, name);
      keys.push({ kid, ...key });
    } catch (err) {
      problems.push(`keys.dir: ${name}: ${(err as Error).message}`);
    }
  }
  if (!keys.some((k) => k.alg === algorithm)) {
    problems.push(`token.algorithm: no ${algorithm} key in keys.dir ${dir}`);
  }
  if (problems.length > 0) throw new ConfigError(problems, source);
  return new KeyRing(keys, algorithm);
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
  return { alg: algorithmOf(privateKey), privateKey };
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
    throw new Error(`an ${alg} key must have ${want}`);
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
  const derived = algorithmOf(privateKey);
  if (derived !== alg) throw new Error(`"alg" is ${alg} but the key is for ${derived}`);
  return { alg: derived, privateKey };
}

/** The one algorithm a key may sign with; refuses everything else. */
function algorithmOf(key: KeyObject): SigningAlgorithm {
  const type = key.asymmetricKeyType;
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1') return 'ES256';
    throw new Error(`EC curve ${curve ?? 'unknown'} is not supported (only P-256, for ES256)`);
  }
  if (type === 'ed25519') return 'EdDSA';
  if (type === 'rsa') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits >= MIN_RSA_BITS) return 'RS256';
    throw new Error(`RSA key of ${bits} bits is too short (at least ${MIN_RSA_BITS}, for RS256)`);
  }
  throw new Error(`key type ${type ?? 'unknown'} is not supported (P-256, Ed25519 or RSA)`);
}
