/**
 * Scope grammar (RFC 6749 §3.3): scope-token = 1*( %x21 / %x23-5B / %x5D-7E ),
 * scopes separated by single spaces.
 */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

export function isScopeToken(value: string): boolean {
  return SCOPE_TOKEN.test(value);
}

/** Splits a space-separated scope string into a set; empty input gives an empty set. */
export function parseScope(scope: string): Set<string> {
  const out = new Set<string>();
  for (const part of scope.split(' ')) {
    if (part !== '') out.add(part);
  }
  return out;
}

/** True when every required scope is granted. */
export function hasScopes(granted: ReadonlySet<string>, required: readonly string[]): boolean {
  for (const s of required) {
    if (!granted.has(s)) return false;
  }
  return true;
}
