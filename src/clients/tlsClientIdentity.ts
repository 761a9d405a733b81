/**
 * The certificate identity a `tls_client_auth` client registers (RFC 8705 §2.1.2): exactly
 * one of
 *
 *   subjectDn  `tls_client_auth_subject_dn`: an RFC 4514 string (`distinguishedName.ts`)
 *   sanDns     `tls_client_auth_san_dns`: a DNS name (compared case-insensitively)
 *   sanUri     `tls_client_auth_san_uri`: an absolute URI (exactly)
 *   sanIp      `tls_client_auth_san_ip`: an IPv4 or IPv6 address (by its bytes)
 *   sanEmail   `tls_client_auth_san_email`: an rfc822Name (exactly)
 *
 * Parsed once at load; the comparison with a certificate is `oauth/certificateNames.ts`.
 */
import { isIP } from 'node:net';
import { isWellFormedText } from '../domain/principal.js';
import { type DistinguishedName, parseDistinguishedName } from './distinguishedName.js';

export const TLS_IDENTITY_KINDS = ['subjectDn', 'sanDns', 'sanUri', 'sanIp', 'sanEmail'] as const;
export type TlsIdentityKind = (typeof TLS_IDENTITY_KINDS)[number];

export type TlsClientIdentity =
  | {
      readonly kind: 'subjectDn';
      /** As written in the file. */
      readonly value: string;
      readonly dn: DistinguishedName;
    }
  | {
      readonly kind: 'sanDns' | 'sanUri' | 'sanEmail';
      /** `sanDns` lower-cased (ASCII), the others as written. */
      readonly value: string;
    }
  | {
      readonly kind: 'sanIp';
      readonly value: string;
      /** The address's 4 or 16 bytes, as an `iPAddress` GeneralName holds them. */
      readonly bytes: Buffer;
    };

const MAX_LENGTH = 1024;

/** The identity of `value`; pushes its problems (prefixed with `path`) and returns null then. */
export function tlsClientIdentity(
  value: unknown,
  path: string,
  problems: string[],
): TlsClientIdentity | null {
  if (value === undefined) return null;
  const kinds = TLS_IDENTITY_KINDS.join(', ');
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    problems.push(`${path}: must be an object with one of ${kinds}`);
    return null;
  }
  const keys = Object.keys(value);
  const kind = keys[0] as TlsIdentityKind | undefined;
  if (keys.length !== 1 || kind === undefined || !TLS_IDENTITY_KINDS.includes(kind)) {
    problems.push(`${path}: must hold exactly one of ${kinds}`);
    return null;
  }
  const text = (value as Record<string, unknown>)[kind];
  const at = `${path}.${kind}`;
  if (
    typeof text !== 'string' ||
    text.length === 0 ||
    text.length > MAX_LENGTH ||
    !isWellFormedText(text) ||
    /\p{Cc}/u.test(text)
  ) {
    problems.push(`${at}: must be a non-empty string of at most ${MAX_LENGTH} characters`);
    return null;
  }
  const problem = (message: string) => {
    problems.push(`${at}: ${message}`);
    return null;
  };
  switch (kind) {
    case 'subjectDn': {
      const parsed = parseDistinguishedName(text);
      if ('problem' in parsed)
        return problem(`not an RFC 4514 distinguished name: ${parsed.problem}`);
      return Object.freeze({ kind, value: text, dn: parsed.dn });
    }
    case 'sanDns':
      if (!/^[A-Za-z0-9*_](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?$/.test(text)) {
        return problem('must be a DNS name (ASCII; an IDN in its xn-- form)');
      }
      return Object.freeze({ kind, value: text.toLowerCase() });
    case 'sanUri':
      if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(text) || !URL.canParse(text) || /\s/.test(text)) {
        return problem('must be an absolute URI');
      }
      return Object.freeze({ kind, value: text });
    case 'sanIp': {
      const bytes = ipBytes(text);
      if (bytes === null) return problem('must be an IPv4 or IPv6 address');
      return Object.freeze({ kind, value: text, bytes });
    }
    case 'sanEmail':
      if (!/^[^\s@]+@[^\s@]+$/.test(text)) return problem('must be an email address');
      return Object.freeze({ kind, value: text });
  }
}

/** The 4 or 16 bytes of an IP address, or null. */
export function ipBytes(text: string): Buffer | null {
  const version = isIP(text);
  if (version === 4) return Buffer.from(text.split('.').map(Number));
  if (version !== 6) return null;
  // Expand `::` and a trailing dotted IPv4 part into eight 16-bit groups.
  let groups = text;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(groups);
  if (dotted !== null) {
    const v4 = (dotted[1] as string).split('.').map(Number) as [number, number, number, number];
    groups = `${groups.slice(0, dotted.index)}${((v4[0] << 8) | v4[1]).toString(16)}:${((v4[2] << 8) | v4[3]).toString(16)}`;
  }
  const [head = '', tail] = groups.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros =
    tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  const all = [...left, ...zeros, ...right];
  if (all.length !== 8) return null;
  const out = Buffer.alloc(16);
  all.forEach((group, index) => {
    out.writeUInt16BE(Number.parseInt(group, 16), index * 2);
  });
  return out;
}
