/**
 * The known name closest to a mistyped one, for "did you mean" hints (CLI commands and
 * options, environment variables). Distance is the optimal-string-alignment edit
 * distance: insertions, deletions, substitutions and swaps of two neighbours cost 1, so
 * `lsit` is one edit from `list`.
 */

/** The candidate with the fewest edits from `name` (the first of equals); null when none. */
export function nearestName(
  name: string,
  candidates: Iterable<string>,
): { name: string; distance: number } | null {
  let best: { name: string; distance: number } | null = null;
  for (const candidate of candidates) {
    const distance = editDistance(name, candidate);
    if (best === null || distance < best.distance) best = { name: candidate, distance };
  }
  return best;
}

/**
 * The candidate close enough to `name` to be what was meant: at most two edits, and
 * fewer than half the longer name (so `ls` suggests nothing for `list`, nor `frob` `keys`).
 */
export function likelyMeant(name: string, candidates: Iterable<string>): string | null {
  const best = nearestName(name, candidates);
  if (best === null || best.distance === 0) return null;
  const longer = Math.max(name.length, best.name.length);
  return best.distance <= 2 && best.distance * 2 < longer ? best.name : null;
}

export function editDistance(a: string, b: string): number {
  // Rows i-2, i-1 and i of the table; a swap looks two rows back.
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, (before[j - 2] ?? 0) + 1);
      }
      current[j] = d;
    }
    before = previous;
    previous = current;
  }
  return previous[b.length] ?? 0;
}
