/**
 * Readers of a configuration the schema may have refused: the rules run after a schema
 * failure too, so every value is read with a type check, and a value of the wrong type
 * (the schema's problem, reported there) reads as absent.
 */

export type Loose = Record<string, unknown>;

export function isMapping(value: unknown): value is Loose {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A section that is a mapping, else an empty one. */
export function section(value: unknown): Loose {
  return isMapping(value) ? value : {};
}

/** The entries of a list that are mappings, with their indexes (others are the schema's). */
export function mappings(value: unknown): [number, Loose][] {
  if (!Array.isArray(value)) return [];
  const out: [number, Loose][] = [];
  value.forEach((item, i) => {
    if (isMapping(item)) out.push([i, item]);
  });
  return out;
}

/** The string entries of a list, with their indexes (others are the schema's). */
export function strings(value: unknown): [number, string][] {
  if (!Array.isArray(value)) return [];
  const out: [number, string][] = [];
  value.forEach((item, i) => {
    if (typeof item === 'string') out.push([i, item]);
  });
  return out;
}

export function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** Records `value` in `seen`; true when it was there already (null: nothing to record). */
export function repeated(seen: Set<string>, value: string | null): boolean {
  if (value === null) return false;
  if (seen.has(value)) return true;
  seen.add(value);
  return false;
}
