/**
 * The `crit` header parameter (RFC 7515 §4.1.11): a list of non-empty names, each an
 * extension the recipient must understand and the header must carry. The one extension
 * understood is `b64` (RFC 7797 §3), which must then be a boolean; a JWT never uses
 * `b64: false` (RFC 7797 §7), which the verifier refuses once the signature is checked.
 * These are the rules jose applies, with the same outcomes (`malformed` for a broken
 * header, `unsupported` for an extension not understood).
 */
import { invalid } from './invalidToken.js';

const UNDERSTOOD: ReadonlySet<string> = new Set(['b64']);

/** Throws unless the header's `crit` is absent or names only understood, present extensions; returns the `b64` flag. */
export function checkCriticalHeader(header: Readonly<Record<string, unknown>>): boolean {
  const crit = header.crit;
  if (crit === undefined) return true;
  if (
    !Array.isArray(crit) ||
    crit.length === 0 ||
    crit.some((name) => typeof name !== 'string' || name.length === 0)
  ) {
    throw malformed();
  }
  for (const name of crit as string[]) {
    if (!UNDERSTOOD.has(name)) {
      throw invalid('unsupported', 'The access token uses an unsupported feature.');
    }
    if (!Object.hasOwn(header, name) || header[name] === undefined) throw malformed();
  }
  if (!crit.includes('b64')) return true;
  if (typeof header.b64 !== 'boolean') throw malformed();
  return header.b64;
}

export function malformed() {
  return invalid('malformed', 'The access token is malformed.');
}
