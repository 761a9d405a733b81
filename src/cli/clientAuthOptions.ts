/**
 * The OAuth 2.0 options of `portaria clients add` and `portaria clients set-auth`:
 * `--auth`, `--jwks FILE` | `--jwks-uri URL`, `--alg`, `--audience` (repeatable),
 * `--permission` (repeatable), and `tls_client_auth`'s certificate identity, one of
 * `--tls-subject-dn`, `--tls-san-dns`, `--tls-san-uri`, `--tls-san-ip`, `--tls-san-email`. Checked with the clients file's own rules before anything
 * is written; a JWKS file is read with the same key-set code the gateway uses, so a file
 * without a usable key for the client's algorithm is refused here, not at its first
 * assertion. The file is stored relative to the clients file's directory when it lies
 * under it (the two then move together), else absolute.
 */
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import type { ClientAuthFields } from '../clients/clientsFile.js';
import {
  ASSERTION_ALGS,
  AUTH_METHODS,
  jwksUriProblem,
  PERMISSIONS,
} from '../clients/oauthClientFields.js';
import { type TlsIdentityKind, tlsClientIdentity } from '../clients/tlsClientIdentity.js';
import { ConfigError } from '../config/configError.js';
import { clientKeySetConfig } from '../issuers/clientKeySetConfig.js';
import { StaticKeySet } from '../issuers/staticKeySet.js';
import { type CliContext, type OptionsConfig, type ParsedCommand, UsageError } from './args.js';

/** The identity options, by the `tlsClientAuth` member each sets (RFC 8705 §2.1.2). */
const TLS_IDENTITY_OPTIONS: Readonly<Record<string, TlsIdentityKind>> = {
  'tls-subject-dn': 'subjectDn',
  'tls-san-dns': 'sanDns',
  'tls-san-uri': 'sanUri',
  'tls-san-ip': 'sanIp',
  'tls-san-email': 'sanEmail',
};

export const AUTH_OPTIONS: OptionsConfig = {
  auth: { type: 'string' },
  jwks: { type: 'string' },
  'jwks-uri': { type: 'string' },
  alg: { type: 'string' },
  audience: { type: 'string', multiple: true },
  permission: { type: 'string', multiple: true },
  ...Object.fromEntries(
    Object.keys(TLS_IDENTITY_OPTIONS).map((option) => [option, { type: 'string' as const }]),
  ),
};

export const AUTH_HELP = `  --auth METHODS       comma-separated: ${AUTH_METHODS.join(', ')}
                       (default: both secret methods; no secret method: no secret)
  --jwks FILE          the client's public keys (JWK Set or PEM) for private_key_jwt
                       and self_signed_tls_client_auth
  --jwks-uri URL       or where to fetch them (https:, http: on loopback only)
  --alg ALG            the one algorithm of its assertions: ${ASSERTION_ALGS.join(', ')} (default ES256)
  --audience AUD       a token audience it may ask for with resource (repeatable;
                       default: the gateway's audience)
  --permission P       what else it may do: ${PERMISSIONS.join(', ')} (repeatable)
  --tls-subject-dn DN  tls_client_auth: the certificate's subject, RFC 4514
                       ("CN=partner,O=Acme,C=PT"; compared exactly, in order)
  --tls-san-dns NAME   or a subjectAltName of it: a DNS name,
  --tls-san-uri URI    a URI,
  --tls-san-ip IP      an IP address,
  --tls-san-email ADDR or an email address (one identity in all)`;

/** The OAuth fields the options give (absent options: absent fields). */
export async function authFieldsOf(
  cmd: string,
  parsed: ParsedCommand,
  clientsFile: string,
  ctx: CliContext,
): Promise<ClientAuthFields> {
  const fields: ClientAuthFields = {};
  const values = parsed.values as Record<string, unknown>;
  const auth = values.auth as string | undefined;
  if (auth !== undefined) {
    const methods = auth.split(',').map((m) => m.trim());
    const unknown = methods.find((m) => !(AUTH_METHODS as readonly string[]).includes(m));
    if (unknown !== undefined || methods.length === 0) {
      throw new UsageError(
        cmd,
        `--auth: ${JSON.stringify(unknown ?? auth)} is not one of ${AUTH_METHODS.join(', ')}`,
      );
    }
    fields.authMethods = [...new Set(methods)];
  }
  const alg = values.alg as string | undefined;
  if (alg !== undefined) {
    if (!(ASSERTION_ALGS as readonly string[]).includes(alg)) {
      throw new UsageError(cmd, `--alg: must be one of ${ASSERTION_ALGS.join(', ')}`);
    }
    fields.assertionAlg = alg;
  }
  const jwks = values.jwks as string | undefined;
  const jwksUri = values['jwks-uri'] as string | undefined;
  if (jwks !== undefined && jwksUri !== undefined) {
    throw new UsageError(cmd, '--jwks and --jwks-uri are exclusive');
  }
  if (jwksUri !== undefined) {
    const problem = jwksUriProblem(jwksUri);
    if (problem) throw new UsageError(cmd, `--jwks-uri: ${problem}`);
    fields.jwksUri = jwksUri;
  }
  if (jwks !== undefined) {
    const path = resolve(ctx.cwd, jwks);
    await checkKeyFile(cmd, path, fields.assertionAlg ?? 'ES256');
    const inside = relative(dirname(resolve(ctx.cwd, clientsFile)), path);
    fields.jwksFile = inside.startsWith('..') || isAbsolute(inside) ? path : inside;
  }
  const audiences = values.audience as string[] | undefined;
  if (audiences !== undefined) fields.audiences = [...new Set(audiences)];
  const permissions = values.permission as string[] | undefined;
  if (permissions !== undefined) fields.permissions = [...new Set(permissions)];
  const identities = Object.keys(TLS_IDENTITY_OPTIONS).filter((o) => values[o] !== undefined);
  if (identities.length > 1) {
    throw new UsageError(cmd, `${identities.map((o) => `--${o}`).join(' and ')} are exclusive`);
  }
  const [option] = identities;
  if (option !== undefined) {
    const identity = { [TLS_IDENTITY_OPTIONS[option] as string]: values[option] as string };
    const problems: string[] = [];
    tlsClientIdentity(identity, 'tlsClientAuth', problems);
    const [problem] = problems;
    if (problem !== undefined) {
      throw new UsageError(cmd, `--${option}: ${problem.replace(/^[^:]*: /, '')}`);
    }
    fields.tlsClientAuth = identity;
  }
  return fields;
}

/** Reads the key file as the gateway will; a `UsageError` naming its problems otherwise. */
async function checkKeyFile(cmd: string, path: string, alg: string): Promise<void> {
  const keys = new StaticKeySet(
    clientKeySetConfig({
      issuer: 'client',
      jwksUri: null,
      keyFile: path,
      algorithm: alg as 'ES256',
      clockSkewSeconds: 0,
    }),
  );
  try {
    await keys.load();
  } catch (error) {
    if (error instanceof ConfigError) {
      const problems = error.problems.map((p) =>
        p.replace(/^issuers\[[^\]]*\]\.keyFile/, '--jwks'),
      );
      throw new UsageError(cmd, `${problems.join('; ')} (for ${alg})`);
    }
    throw error;
  } finally {
    keys.close();
  }
}
