/**
 * A JWS signature over a signing input (RFC 7515 §5.1 step 5) with Node's synchronous
 * `crypto.sign`, in the JWS form of the algorithm: ECDSA as r‖s (RFC 7518 §3.4), turned
 * from the DER OpenSSL writes here rather than by Node's `dsaEncoding` option, which
 * needs an options object for the key (Node 24 pays two thrown TypeErrors for one:
 * `signatureParameters.ts`).
 */
import { type KeyObject, sign } from 'node:crypto';
import { ecdsaJwsSignature } from './ecdsaDer.js';
import { signatureParameters } from './signatureParameters.js';

/** The signature octets of `signingInput` by `privateKey` under `alg`. */
export function signJws(alg: string, privateKey: KeyObject, signingInput: Buffer): Buffer {
  const { digest, keyArgument, ecdsaIntegerLength } = signatureParameters(alg, privateKey);
  const signature = sign(digest, signingInput, keyArgument);
  return ecdsaIntegerLength === null ? signature : ecdsaJwsSignature(signature, ecdsaIntegerLength);
}
