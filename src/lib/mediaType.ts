/**
 * A `Content-Type` naming `type`, optionally with `charset=utf-8`. Type and parameter
 * names are case-insensitive (RFC 9110 §8.3.1); any other parameter or charset is refused:
 * the bodies we read are decoded as UTF-8 only.
 */
export function isUtf8MediaType(header: string | undefined, type: string): boolean {
  if (header === undefined) return false;
  const parts = header.split(';');
  if ((parts[0] as string).trim().toLowerCase() !== type) return false;
  for (let i = 1; i < parts.length; i++) {
    const param = (parts[i] as string).trim();
    if (param === '') continue;
    const eq = param.indexOf('=');
    if (eq === -1) return false;
    const name = param.slice(0, eq).trim().toLowerCase();
    const value = param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (name !== 'charset' || (value !== 'utf-8' && value !== 'utf8')) return false;
  }
  return true;
}

/** `application/json` (RFC 8259 §8.1: JSON exchanged between systems is UTF-8). */
export function isJsonMediaType(header: string | undefined): boolean {
  return isUtf8MediaType(header, 'application/json');
}
