/**
 * The signature step of verification: checks a compact JWS's signature (RFC 7515 §5.2
 * steps 5–8) over its signing input, `BASE64URL(header) '.' BASE64URL(payload)` as
 * written in the token, with Node's synchronous `crypto.verify` on the cached KeyObject:
 * one OpenSSL call on this thread, where WebCrypto (jose) queues a job on the thread pool
 * and settles promises around it, at about twice the CPU per signature
 * (bench/RESULTS.md).
 *
 * It checks the signature only: the token's form and canonical encoding
 * (`compactJws.ts`), the signature's length for the key (`signatureLength.ts`) and the
 * header and claims rules come before and after it, in the verifier's order.
 */
import { type KeyObject, verify } from 'node:crypto';
import { ecdsaDerSignature } from '../keys/ecdsaDer.js';
import { signatureParameters } from '../keys/signatureParameters.js';

/**
 * True when `token` (a compact JWS in canonical base64url) carries a valid `alg`
 * signature by `key`. A signature OpenSSL cannot even parse is not valid (false). Throws a
 * TypeError when `key` is not a key for `alg` (a programming error, not a refusal).
 */
export function verifyJwsSignature(token: string, alg: string, key: KeyObject): boolean {
  const parameters = signatureParameters(alg, key);
  const dot = token.lastIndexOf('.');
  const octets = Buffer.from(token.slice(dot + 1), 'base64url');
  const length = parameters.ecdsaIntegerLength;
  const signature = length === null ? octets : ecdsaDerSignature(octets, length);
  if (signature === null) return false;
  const signingInput = Buffer.from(token.slice(0, dot), 'latin1');
  try {
    return verify(parameters.digest, signingInput, parameters.keyArgument, signature);
  } catch {
    return false;
  }
}
