/**
 * A request body that must be one JSON object with only the named properties, each at
 * most once (the token request, the admin revocation body).
 *
 * Duplicate keys are refused: JSON.parse would silently keep the last one, and two
 * parsers disagreeing on which value was meant is how smuggling starts. Keys such as
 * `__proto__` are plain own properties after JSON.parse and fail the "no other property"
 * rule; nothing is merged into an existing object. Refusals are 400 `invalid-request`
 * whose detail names the property, never a value.
 */
import { type FailureReason, PortariaError } from '../errors.js';

/** Longest property name quoted back in a detail; longer names are cut. */
const MAX_NAME_IN_DETAIL = 64;

export function parseStrictJsonObject(
  text: string,
  allowed: ReadonlySet<string>,
): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalidRequest('body-not-json', 'The request body is not valid JSON.');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidRequest('body-not-object', 'The request body must be a JSON object.');
  }
  const duplicate = firstDuplicateTopLevelKey(text);
  if (duplicate !== null) {
    throw invalidRequest(
      'duplicate-key',
      `Property "${quoteName(duplicate)}" appears more than once.`,
    );
  }
  const record = body as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!allowed.has(key)) {
      throw invalidRequest('unknown-property', `Property "${quoteName(key)}" is not allowed.`);
    }
  }
  return record;
}

export function invalidRequest(reason: FailureReason, detail: string): PortariaError {
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
