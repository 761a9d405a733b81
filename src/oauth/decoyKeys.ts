/**
 * Public keys no client assertion is signed with, one per assertion algorithm: a
 * refusal decided before the signature check spends that check on one of them, so it
 * costs what a forged assertion of a real client costs (`clientAssertion.ts`). Fixed
 * public keys (their private halves were discarded): nothing is generated at run time.
 */
import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { AssertionAlg } from '../clients/oauthClientFields.js';

const RSA: JsonWebKey = {
  kty: 'RSA',
  n: '3bPtYgJ6dk7KEugel_SVLKVz-P3IM0-lH92f560r2t3Bh6khaAinP-eRn7_rSnhR3fXkGXANbz0ccMHsk9TMaZp1PdH0sCUa378CDRySiMILbd0w-jn3X4uvEC9BVeju8zgY8EOqoYuuH6AZ_kg1LAJ-fy5kugoP-gw9bSb9Uew5lVJk8NXiHk1BYGeKg2itgNY5SDlXEafuspLHgENJ2LEpzJrzPuKGp9vhRx57Zau3un6yVQsBq-Qe8EQg8NYzopBUkBSJySuLm4VvVyMdYbrIZYSrHWLVE8BVc1aFOXMNkeTVdii-2w-Xw6fy94jndA-YZXr7tXtYNBBO2C-_xw',
  e: 'AQAB',
};

const DECOY_JWKS: Readonly<Record<AssertionAlg, JsonWebKey>> = {
  ES256: {
    kty: 'EC',
    crv: 'P-256',
    x: 'QoXEeAOYzW-PIv1KQ74RubX5H8cUMyLXVafIn8Rz6C4',
    y: 'wo_tbarSagjeMSYmXQCbiDbO7jO1OLVespqwKWYrLQM',
  },
  ES384: {
    kty: 'EC',
    crv: 'P-384',
    x: 'E7d1uk2rf644kk3uWFjFT0zH2SpE0O-0U-1Gs7q18UfiayB5lJQuqYthQ-1Z5ik_',
    y: '4EsHkBUO6WX1j0kG7xGOp8A1vMll1J1PWrVHKY2KhkhOfVGNH_HGgLOiRcKAt14L',
  },
  EdDSA: { kty: 'OKP', crv: 'Ed25519', x: 'OgWjgqzbpj2bg0FgfRcwOiJ4mTDiLcTh0adLYLok_k8' },
  RS256: RSA,
  PS256: RSA,
};

const imported = new Map<AssertionAlg, KeyObject>();

/** The decoy key of `alg`, imported on first use. */
export function decoyKey(alg: AssertionAlg): KeyObject {
  let key = imported.get(alg);
  if (key === undefined) {
    key = createPublicKey({ key: DECOY_JWKS[alg], format: 'jwk' });
    imported.set(alg, key);
  }
  return key;
}
