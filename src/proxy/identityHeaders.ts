/**
 * The identity headers: the verified principal's claims (and the client certificate's
 * fields) under the names `identityHeaders` maps them to, compiled once. One home for the
 * forwarder, which sets them on the upstream request, and for the decision entries, which
 * hand them to the proxy that asked (`authorizer/`). A claim gives a value when it is a
 * string, an array of strings (joined by a space) or a finite number, percent-encoded by
 * `identityHeaderValue`; `certificate.subject`, `certificate.san` and
 * `certificate.thumbprint` map the request's client certificate (`certificateIdentity.ts`).
 *
 * The reserved namespace is every configured name plus the defaults: an upstream written
 * against the defaults must never read a value the client chose, under a custom mapping
 * too. A name is matched with `_` read as `-` (CGI-style servers read `X_Client_Id` as
 * `X-Client-Id`).
 */
import { headerKey } from '../config/callerHeaders.js';
import type { ClientCertificate } from '../domain/clientCertificate.js';
import type { Principal } from '../domain/principal.js';
import { certificateField, isCertificateField } from './certificateIdentity.js';
import { identityHeaderValue } from './identityHeaderValue.js';

/** The default identity header names (config `identityHeaders` default), always reserved. */
export const DEFAULT_IDENTITY_HEADERS = ['x-client-id', 'x-token-scope', 'x-token-jti'] as const;

export interface IdentityHeaders {
  /** The configured names, lower case, in mapping order. */
  readonly names: readonly string[];
  /** The configured names and the defaults, lower case with `-`. */
  readonly reserved: ReadonlySet<string>;
  /** True when `name` (any case, `_` or `-`) is in the reserved namespace. */
  isReserved(name: string): boolean;
  /** Pushes `name, value` for each header the principal and certificate give. */
  write(
    out: (string | string[])[],
    principal: Principal,
    certificate: ClientCertificate | null,
  ): void;
}

export function compileIdentityHeaders(mapping: Readonly<Record<string, string>>): IdentityHeaders {
  // Header name → claim; a name mapped twice keeps its last claim (the config refuses it).
  const byHeader = new Map<string, string>();
  for (const [claim, header] of Object.entries(mapping)) byHeader.set(headerKey(header), claim);
  const claims = [...byHeader.values()];
  const fromCertificate = claims.map(isCertificateField);
  const names = [...byHeader.keys()];
  const reserved: ReadonlySet<string> = new Set([...names, ...DEFAULT_IDENTITY_HEADERS]);
  return {
    names,
    reserved,
    isReserved: (name) => reserved.has(headerKey(name)),
    write(out, principal, certificate) {
      for (let i = 0; i < claims.length; i++) {
        const claim = claims[i] as string;
        const value = fromCertificate[i]
          ? certificateField(claim, certificate)
          : claimValue(claim === 'scope' ? principal.scope : principal.claims[claim]);
        if (value !== undefined) out.push(names[i] as string, value);
      }
    },
  };
}

function isStringArray(value: unknown): value is string[] {
  if (!Array.isArray(value)) return false;
  for (const item of value) if (typeof item !== 'string') return false;
  return true;
}

function claimValue(value: unknown): string | undefined {
  let text: string | undefined;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number') text = Number.isFinite(value) ? String(value) : undefined;
  else if (isStringArray(value)) text = value.join(' ');
  return text === undefined ? undefined : identityHeaderValue(text);
}
