/**
 * One line of the revocation log: `<check> <json>\n`, where `<check>` is the first 8 hex
 * characters of the SHA-256 of the JSON text. The check catches torn and bit-flipped
 * lines; it is not a signature (whoever can write the file can write valid lines).
 *
 * `decodeRevocationLine` takes a line without its newline and returns undefined for
 * anything that is not exactly a line this module wrote.
 */
import { createHash } from 'node:crypto';

export type RevocationRecord =
  | { readonly kind: 'token'; readonly tokenId: string; readonly expiresAt: number }
  | {
      readonly kind: 'client';
      readonly clientId: string;
      readonly issuedBefore: number;
      readonly expiresAt: number;
    };

const CHECK_LENGTH = 8;

function check(json: string): string {
  return createHash('sha256').update(json, 'utf8').digest('hex').slice(0, CHECK_LENGTH);
}

export function encodeRevocationRecord(record: RevocationRecord): string {
  const json =
    record.kind === 'token'
      ? JSON.stringify({ kind: 'token', tokenId: record.tokenId, expiresAt: record.expiresAt })
      : JSON.stringify({
          kind: 'client',
          clientId: record.clientId,
          issuedBefore: record.issuedBefore,
          expiresAt: record.expiresAt,
        });
  return `${check(json)} ${json}\n`;
}

export function decodeRevocationLine(line: string): RevocationRecord | undefined {
  if (line.length < CHECK_LENGTH + 2 || line[CHECK_LENGTH] !== ' ') return undefined;
  const json = line.slice(CHECK_LENGTH + 1);
  if (line.slice(0, CHECK_LENGTH) !== check(json)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (!isSeconds(v.expiresAt)) return undefined;
  if (v.kind === 'token' && isId(v.tokenId)) {
    return { kind: 'token', tokenId: v.tokenId, expiresAt: v.expiresAt };
  }
  if (v.kind === 'client' && isId(v.clientId) && isSeconds(v.issuedBefore)) {
    return {
      kind: 'client',
      clientId: v.clientId,
      issuedBefore: v.issuedBefore,
      expiresAt: v.expiresAt,
    };
  }
  return undefined;
}

function isId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

function isSeconds(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** Throws a TypeError unless the record names a non-empty id and finite times (stores call it before accepting). */
export function assertRevocationRecord(record: RevocationRecord): void {
  const id = record.kind === 'token' ? record.tokenId : record.clientId;
  const times =
    record.kind === 'token' ? [record.expiresAt] : [record.issuedBefore, record.expiresAt];
  if (typeof id !== 'string' || id === '' || !times.every(Number.isFinite)) {
    throw new TypeError('revocation needs a non-empty id and finite times');
  }
}
