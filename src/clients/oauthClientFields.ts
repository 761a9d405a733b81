/**
 * A client's OAuth 2.0 fields in the clients file, beside its secrets and scopes:
 *
 *   authMethods   `client_secret_basic`, `client_secret_post`, `private_key_jwt`,
 *                 `tls_client_auth`, `self_signed_tls_client_auth` (RFC 7591 §2
 *                 `token_endpoint_auth_method` values, RFC 8705 §2). Default for a client
 *                 with secrets: both secret methods. A client with no secret lists no
 *                 secret method.
 *   jwksFile | jwksUri   the client's public keys for `private_key_jwt` and
 *                 `self_signed_tls_client_auth` (exactly one of them with either method,
 *                 neither without). A relative `jwksFile` is read from the clients file's
 *                 directory.
 *   tlsClientAuth the one certificate identity of `tls_client_auth` (RFC 8705 §2.1.2):
 *                 `{subjectDn}` (RFC 4514, `distinguishedName.ts`), `{sanDns}`, `{sanUri}`,
 *                 `{sanIp}` or `{sanEmail}`; required with that method, refused without.
 *   assertionAlg  the one `alg` its assertions may use (default ES256): pinned per
 *                 client, so a key of another type never verifies (RFC 8725 §3.1).
 *   audiences     the token audiences it may ask for with `resource` (RFC 8707); absent:
 *                 the gateway's configured audience only.
 *   permissions   what else it may do at the OAuth endpoints (`introspect`).
 *
 * These fields change nothing for the contract's JSON operation: any client with a
 * secret keeps getting tokens there.
 */
import { type TlsClientIdentity, tlsClientIdentity } from './tlsClientIdentity.js';

export const AUTH_METHODS = [
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
  'tls_client_auth',
  'self_signed_tls_client_auth',
] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

/** Asymmetric algorithms only: `none` and HMAC are never a client's (RFC 7523 §3, RFC 8725 §3.1). */
export const ASSERTION_ALGS = ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256'] as const;
export type AssertionAlg = (typeof ASSERTION_ALGS)[number];

export const PERMISSIONS = ['introspect'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const SECRET_METHODS: readonly AuthMethod[] = ['client_secret_basic', 'client_secret_post'];
/** The methods of RFC 8705 §2: the client certificate is the credential. */
export const TLS_METHODS: readonly AuthMethod[] = [
  'tls_client_auth',
  'self_signed_tls_client_auth',
];
/** The methods that use the client's registered public keys. */
const KEY_METHODS: readonly AuthMethod[] = ['private_key_jwt', 'self_signed_tls_client_auth'];
export const MAX_AUDIENCES = 32;
const MAX_AUDIENCE_LENGTH = 512;
const MAX_PATH_LENGTH = 4096;

export interface OAuthClientFields {
  readonly authMethods: readonly AuthMethod[];
  /** As written in the file (relative paths are read from the clients file's directory). */
  readonly jwksFile: string | null;
  readonly jwksUri: string | null;
  readonly assertionAlg: AssertionAlg;
  /** null: the gateway's configured audience only. */
  readonly audiences: readonly string[] | null;
  readonly permissions: readonly Permission[];
  /** `tls_client_auth`'s certificate identity; null without that method. */
  readonly tlsClientAuth: TlsClientIdentity | null;
}

export const OAUTH_FIELDS = [
  'authMethods',
  'jwksFile',
  'jwksUri',
  'assertionAlg',
  'audiences',
  'permissions',
  'tlsClientAuth',
] as const;

/** The fields of one entry; pushes every problem (prefixed with `path`) and returns null then. */
export function oauthClientFields(
  entry: Record<string, unknown>,
  path: string,
  hasSecrets: boolean,
  problems: string[],
): OAuthClientFields | null {
  const before = problems.length;
  const authMethods = methodsOf(entry.authMethods, `${path}.authMethods`, hasSecrets, problems);
  const jwksFile = optionalText(entry.jwksFile, `${path}.jwksFile`, MAX_PATH_LENGTH, problems);
  const jwksUri = optionalText(entry.jwksUri, `${path}.jwksUri`, MAX_PATH_LENGTH, problems);
  if (jwksUri !== null) {
    const problem = jwksUriProblem(jwksUri);
    if (problem) problems.push(`${path}.jwksUri: ${problem}`);
  }
  const keyMethod = KEY_METHODS.find((m) => authMethods?.includes(m) === true);
  const usesJwt = keyMethod !== undefined;
  if (usesJwt && jwksFile === null && jwksUri === null) {
    problems.push(`${path}: ${keyMethod} needs the client's keys: jwksFile or jwksUri`);
  }
  if (jwksFile !== null && jwksUri !== null) {
    problems.push(`${path}: jwksFile and jwksUri are exclusive`);
  }
  if (authMethods !== null && !usesJwt && (jwksFile !== null || jwksUri !== null)) {
    problems.push(
      `${path}: jwksFile and jwksUri are used only with private_key_jwt or self_signed_tls_client_auth in authMethods`,
    );
  }
  const tlsClientAuth = tlsClientIdentity(entry.tlsClientAuth, `${path}.tlsClientAuth`, problems);
  const usesTls = authMethods?.includes('tls_client_auth') === true;
  if (usesTls && tlsClientAuth === null && entry.tlsClientAuth === undefined) {
    problems.push(
      `${path}: tls_client_auth needs the certificate's identity: tlsClientAuth { subjectDn | sanDns | sanUri | sanIp | sanEmail }`,
    );
  }
  if (authMethods !== null && !usesTls && entry.tlsClientAuth !== undefined) {
    problems.push(`${path}: tlsClientAuth is used only with tls_client_auth in authMethods`);
  }
  let assertionAlg: AssertionAlg = 'ES256';
  if (entry.assertionAlg !== undefined) {
    if (ASSERTION_ALGS.includes(entry.assertionAlg as AssertionAlg)) {
      assertionAlg = entry.assertionAlg as AssertionAlg;
    } else {
      problems.push(`${path}.assertionAlg: must be one of ${ASSERTION_ALGS.join(', ')}`);
    }
  }
  const audiences = audiencesOf(entry.audiences, `${path}.audiences`, problems);
  const permissions = permissionsOf(entry.permissions, `${path}.permissions`, problems);
  if (problems.length > before || authMethods === null) return null;
  return Object.freeze({
    authMethods,
    jwksFile,
    jwksUri,
    assertionAlg,
    audiences,
    permissions,
    tlsClientAuth,
  });
}

function methodsOf(
  value: unknown,
  path: string,
  hasSecrets: boolean,
  problems: string[],
): readonly AuthMethod[] | null {
  if (value === undefined) {
    // Without secrets, `secrets` already carries the problem.
    return hasSecrets ? SECRET_METHODS : null;
  }
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    !value.every((m) => AUTH_METHODS.includes(m as AuthMethod))
  ) {
    problems.push(`${path}: must be a non-empty array of ${AUTH_METHODS.join(', ')}`);
    return null;
  }
  if (new Set(value).size !== value.length) {
    problems.push(`${path}: lists a method twice`);
    return null;
  }
  if (!hasSecrets && value.some((m) => SECRET_METHODS.includes(m as AuthMethod))) {
    problems.push(`${path}: ${value.join(', ')} needs a secret, and the client has none`);
    return null;
  }
  return Object.freeze([...(value as AuthMethod[])]);
}

function optionalText(
  value: unknown,
  path: string,
  max: number,
  problems: string[],
): string | null {
  if (value === undefined) return null;
  if (typeof value !== 'string' || value.length === 0 || value.length > max || hasControl(value)) {
    problems.push(`${path}: must be a non-empty string of at most ${max} characters`);
    return null;
  }
  return value;
}

/** Why a client's `jwksUri` is refused: https, or http on a loopback host only. */
export function jwksUriProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.hash !== '' || url.username !== '' || url.password !== '') {
    return 'must not carry a fragment or credentials';
  }
  if (url.protocol === 'https:') return null;
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol === 'http:' && loopback) return null;
  return 'must be an https: URL (http: only on a loopback host)';
}

function audiencesOf(value: unknown, path: string, problems: string[]): readonly string[] | null {
  if (value === undefined) return null;
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_AUDIENCES) {
    problems.push(`${path}: must be an array of 1 to ${MAX_AUDIENCES} audiences`);
    return null;
  }
  const seen = new Set<string>();
  for (const audience of value) {
    if (
      typeof audience !== 'string' ||
      audience.length === 0 ||
      audience.length > MAX_AUDIENCE_LENGTH ||
      hasControl(audience)
    ) {
      problems.push(
        `${path}: ${JSON.stringify(audience)} is not an audience (1 to ${MAX_AUDIENCE_LENGTH} printable characters)`,
      );
    } else if (seen.has(audience)) {
      problems.push(`${path}: duplicate audience ${JSON.stringify(audience)}`);
    }
    if (typeof audience === 'string') seen.add(audience);
  }
  return Object.freeze([...(value as string[])]);
}

function permissionsOf(value: unknown, path: string, problems: string[]): readonly Permission[] {
  if (value === undefined) return Object.freeze([]);
  if (
    !Array.isArray(value) ||
    !value.every((p) => PERMISSIONS.includes(p as Permission)) ||
    new Set(value).size !== value.length
  ) {
    problems.push(`${path}: must be an array of distinct permissions (${PERMISSIONS.join(', ')})`);
    return Object.freeze([]);
  }
  return Object.freeze([...(value as Permission[])]);
}

function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}
