/**
 * The CLI's tables: columns separated by two spaces and aligned by terminal columns
 * (`displayWidth`), not UTF-16 units, since client ids may be CJK, emoji or decomposed.
 * Trailing spaces are trimmed.
 */
import { displayWidth, padToWidth } from './displayWidth.js';

export function table(rows: readonly (readonly string[])[]): string {
  const widths =
    rows[0]?.map((_, col) => Math.max(...rows.map((r) => displayWidth(r[col] ?? '')))) ?? [];
  return rows
    .map(
      (row) =>
        `${row
          .map((cell, col) => padToWidth(cell, widths[col] ?? 0))
          .join('  ')
          .trimEnd()}\n`,
    )
    .join('');
}
