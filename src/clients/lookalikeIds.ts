/**
 * Client ids are compared byte for byte, never normalised (`domain/clientId.ts`), so two
 * clients may differ only in Unicode spelling (NFC `é` and NFD `e` + U+0301) and look the
 * same on a terminal. The CLI uses these to say so, with the ids escaped so they read
 * differently; nothing here changes how ids are matched.
 */

/** The ids in `ids` equal to `id` under NFKC but not byte for byte. */
export function lookalikesOf(ids: readonly string[], id: string): string[] {
  const folded = id.normalize('NFKC');
  return ids.filter((other) => other !== id && other.normalize('NFKC') === folded);
}

/** `id` as a JSON string with every character outside printable ASCII as a `\u` escape. */
export function escapedId(id: string): string {
  return JSON.stringify(id).replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
