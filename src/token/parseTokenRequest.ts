/**
 * Step "schema" of the token operation: the body must be a JSON object with exactly the
 * two string properties of the contract's token request — `clientId` and `clientSecret`,
 * each at least one character, nothing else (additionalProperties: false; duplicate keys
 * and `__proto__` handled by `parseStrictJsonObject`).
 *
 * `detalhe` names the offending field; it never echoes a value.
 */
import { invalidRequest, parseStrictJsonObject } from '../domain/strictJsonObject.js';

export interface TokenRequest {
  readonly clientId: string;
  readonly clientSecret: string;
}

const FIELDS = ['clientId', 'clientSecret'] as const;
const ALLOWED: ReadonlySet<string> = new Set(FIELDS);

export function parseTokenRequest(text: string): TokenRequest {
  const record = parseStrictJsonObject(text, ALLOWED);
  for (const field of FIELDS) {
    if (!Object.hasOwn(record, field))
      throw invalidRequest('missing-field', `${field} is required.`);
    const value = record[field];
    if (typeof value !== 'string') throw invalidRequest('wrong-type', `${field} must be a string.`);
    if (value.length === 0) throw invalidRequest('empty-field', `${field} must not be empty.`);
  }
  return { clientId: record.clientId as string, clientSecret: record.clientSecret as string };
}
