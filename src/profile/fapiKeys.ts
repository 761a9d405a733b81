/**
 * The signing keys under `profile: fapi-br`: the active key signs PS256 with an RSA
 * modulus of at least 2048 bits (FAPI 1.0 Part 2 §8.6; Part 1 §5.2.2 for the size). The
 * loader already refuses smaller RSA keys and wants a key of `token.algorithm`, which the
 * profile requires to be PS256; this check states the profile's rule where the ring is
 * used, whichever way it was built.
 */
import { ConfigError } from '../config/configError.js';
import { FAPI2_ALGORITHMS } from '../config/profileRules.js';
import type { Profile } from '../config/types.js';
import type { KeyRing } from '../keys/keyRing.js';

export const FAPI_MIN_RSA_BITS = 2048;

/** Contradictions of the ring's active key with the profile. */
export function fapiKeyProblems(ring: KeyRing): string[] {
  const active = ring.states().find((k) => k.state === 'active');
  if (active === undefined) return [];
  const problems: string[] = [];
  if (active.alg !== 'PS256') {
    problems.push(
      `keys.dir: the active key ${active.kid} signs ${active.alg}; under profile fapi-br it must be PS256`,
    );
  }
  const signing = ring.signingKey;
  const bits = signing.privateKey.asymmetricKeyDetails?.modulusLength;
  if (bits !== undefined && bits < FAPI_MIN_RSA_BITS) {
    problems.push(
      `keys.dir: the active key ${active.kid} has ${bits} bits; under profile fapi-br an RSA key has at least ${FAPI_MIN_RSA_BITS}`,
    );
  }
  return problems;
}

/** The ring unchanged, or a `ConfigError` naming the key's contradictions under fapi-br. */
export function keyRingUnderProfile(ring: KeyRing, profile: Profile, source: string): KeyRing {
  if (profile === 'fapi2') {
    const active = ring.states().find((k) => k.state === 'active');
    if (active !== undefined && !FAPI2_ALGORITHMS.includes(active.alg)) {
      throw new ConfigError(
        [
          `keys.dir: the active key ${active.kid} signs ${active.alg}; under profile fapi2 it must be PS256, ES256 or EdDSA`,
        ],
        source,
      );
    }
    return ring;
  }
  if (profile !== 'fapi-br') return ring;
  const problems = fapiKeyProblems(ring);
  if (problems.length > 0) throw new ConfigError(problems, source);
  return ring;
}
