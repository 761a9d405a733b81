/**
 * Step "schema" of the token operation: the body must be a JSON object with exactly the
 * two string properties of the contract's token request — `clientId` and `clientSecret`,
 * each at least one character, nothing else (additionalProperties: false).
 *
 * Duplicate keys are refused: JSON.parse would silently keep the last one, and two
 * parsers disagreeing on which `clientId` was meant is how smuggling starts. Keys such
 * as `__proto__` are plain own properties after JSON.parse and fail the "no other
 * property" rule; nothing is merged into an existing object.
 *
 * `detalhe` names the offending field; it never echoes a value.
 */
import { PortariaError } from '../errors.js';

export interface TokenRequest {
  readonly clientId: string;
  readonly clientSecret: string;
}

const FIELDS = ['clientId', 'clientSecret'] as const;
/** Longest property name quoted back in a detail; longer names are cut. */
const MAX_NAME_IN_DETAIL = 64;

export function parseTokenRequest(text: string): TokenRequest {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw bad('body-not-json', 'The request body is not valid JSON.');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw bad('body-not-object', 'The request body must be a JSON object.');
  }
  const duplicate = firstDuplicateTopLevelKey(text);
  if (duplicate !== null) {
    throw bad('duplicate-key', `Property "${quoteName(duplicate)}" appears more than once.`);
  }
  const record = body as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (key !== 'clientId' && key !== 'clientSecret') {
      throw bad('unknown-property', `Property "${quoteName(key)}" is not allowed.`);
    }
  }
  for (const field of FIELDS) {
    if (!Object.hasOwn(record, field)) throw bad('missing-field', `${field} is required.`);
    const value = record[field];
    if (typeof value !== 'string') throw bad('wrong-type', `${field} must be a string.`);
    if (value.length === 0) throw bad('empty-field', `${field} must not be empty.`);
  }
  return { clientId: record.clientId as string, clientSecret: record.clientSecret as string };
}

function bad(reason: string, detail: string): PortariaError {
  return new PortariaError('invalid-request', detail, { reason });
}

function quoteName(name: string): string {
  const cut = name.length > MAX_NAME_IN_DETAIL ? `${name.slice(0, MAX_NAME_IN_DETAIL)}…` : name;
  return JSON.stringify(cut).slice(1, -1);
}

/**
 * Scans already-valid JSON text for a repeated key in the top-level object. Only the
 * top level matters: nested values are refused anyway (no property may be an object).
 */
export function firstDuplicateTopLevelKey(text: string): string | null {
  const seen = new Set<string>();
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const end = stringEnd(text, i);
      if (depth === 1 && expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (seen.has(key)) return key;
        seen.add(key);
        expectKey = false;
      }
      i = end;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      depth++;
      expectKey = depth === 1 && c === 0x7b;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    } else if (c === 0x2c /* , */ && depth === 1) {
      expectKey = true;
    }
  }
  return null;
}

/** Index of the closing quote of the JSON string starting at `start`. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c /* \ */) i++;
    else if (c === 0x22) return i;
  }
  return text.length - 1;
}
