/**
 * The clients file under `profile: fapi-br` (docs/fapi.md). Every client requires a
 * verified certificate and gets certificate-bound tokens only (RFC 8705 §3); its OAuth
 * client authentication is one of FAPI-BR's two methods, `private_key_jwt` or
 * `tls_client_auth` (FAPI 1.0 Part 2 §5.2.2: `client_secret_*` are not FAPI methods,
 * and Open Finance Brasil does not admit `self_signed_tls_client_auth`), its client
 * assertions signed PS256; a lifetime of
 * its own stays within 300–900 s. A client may keep `secrets`: the contract's JSON
 * operation still takes `{clientId, clientSecret}`, and under the profile it takes them
 * only beside the verified certificate it binds the token to (token/tokenService.ts).
 */
import type { ClientRecord, ClientRegistry } from '../clients/clientRegistry.js';
import { ClientRegistry as Registry } from '../clients/clientRegistry.js';
import { SECRET_METHODS } from '../clients/oauthClientFields.js';
import { ConfigError } from '../config/configError.js';
import {
  FAPI_MAX_LIFETIME_SECONDS,
  FAPI_MIN_LIFETIME_SECONDS,
  FAPI2_ALGORITHMS,
} from '../config/profileRules.js';
import type { Profile } from '../config/types.js';

/** The OAuth client authentication methods FAPI-BR admits (strings: the list may grow). */
export const FAPI_AUTH_METHODS: ReadonlySet<string> = new Set([
  'private_key_jwt',
  'tls_client_auth',
]);

const AT = 'under profile fapi-br';

/** Each client's contradictions with the profile, by its path in the file. */
export function fapiClientProblems(registry: ClientRegistry): string[] {
  const problems: string[] = [];
  registry.ids().forEach((id, index) => {
    const client = registry.get(id) as ClientRecord;
    const path = `clients[${index}]`;
    const others = client.authMethods.filter((m) => !FAPI_AUTH_METHODS.has(m as string));
    if (others.length > 0) {
      const unwritten = client.authMethods === SECRET_METHODS ? ', the default with secrets' : '';
      problems.push(
        `${path}.authMethods: ${others.join(', ')} (client ${JSON.stringify(id)}${unwritten}): not FAPI-BR methods ${AT}: list private_key_jwt or tls_client_auth only (the contract's operation still takes its secret, with its certificate)`,
      );
    }
    // Its assertions are JWS like ours: PS256 only (FAPI 1.0 Part 2 §8.6, as Brazil has it).
    if (client.authMethods.includes('private_key_jwt') && client.assertionAlg !== 'PS256') {
      problems.push(
        `${path}.assertionAlg: must be PS256 ${AT} (client ${JSON.stringify(id)} has ${client.assertionAlg}${client.assertionAlg === 'ES256' ? ', the default' : ''})`,
      );
    }
    const lifetime = client.lifetimeSeconds;
    if (
      lifetime !== null &&
      (lifetime < FAPI_MIN_LIFETIME_SECONDS || lifetime > FAPI_MAX_LIFETIME_SECONDS)
    ) {
      problems.push(
        `${path}.lifetimeSeconds: must be from ${FAPI_MIN_LIFETIME_SECONDS} to ${FAPI_MAX_LIFETIME_SECONDS} ${AT} (client ${JSON.stringify(id)} has ${lifetime})`,
      );
    }
  });
  return problems;
}

/**
 * The registry every consumer sees under `profile`: unchanged with `none`; with
 * `fapi-br` every client requires a certificate and bound tokens, or a `ConfigError`
 * naming every contradiction (`source` as the loader names the file).
 */
export function clientsUnderProfile(
  registry: ClientRegistry,
  profile: Profile,
  source: string,
): ClientRegistry {
  if (profile === 'fapi2') return fapi2Clients(registry, source);
  if (profile !== 'fapi-br') return registry;
  const problems = fapiClientProblems(registry);
  if (problems.length > 0) throw new ConfigError(problems, source);
  const records = registry.ids().map((id) =>
    Object.freeze({
      ...(registry.get(id) as ClientRecord),
      requireCertificate: true,
      requireCertificateBound: true,
    }),
  );
  return new Registry(records);
}

/**
 * FAPI 2.0 Security Profile §5.3.3.4: client authentication by mutual TLS or
 * `private_key_jwt` only, assertions in its algorithms (§5.4.1).
 */
export const FAPI2_AUTH_METHODS: ReadonlySet<string> = new Set([
  'private_key_jwt',
  'tls_client_auth',
  'self_signed_tls_client_auth',
]);

/** Each client's contradictions with `profile: fapi2`, by its path in the file. */
export function fapi2ClientProblems(registry: ClientRegistry): string[] {
  const problems: string[] = [];
  registry.ids().forEach((id, index) => {
    const client = registry.get(id) as ClientRecord;
    const path = `clients[${index}]`;
    const others = client.authMethods.filter((m) => !FAPI2_AUTH_METHODS.has(m as string));
    if (others.length > 0) {
      const unwritten = client.authMethods === SECRET_METHODS ? ', the default with secrets' : '';
      problems.push(
        `${path}.authMethods: ${others.join(', ')} (client ${JSON.stringify(id)}${unwritten}): not FAPI 2.0 methods under profile fapi2: list private_key_jwt, tls_client_auth or self_signed_tls_client_auth only (the contract's operation still takes its secret, for sender-constrained tokens)`,
      );
    }
    if (
      client.authMethods.includes('private_key_jwt') &&
      !FAPI2_ALGORITHMS.includes(client.assertionAlg)
    ) {
      problems.push(
        `${path}.assertionAlg: must be PS256, ES256 or EdDSA under profile fapi2 (client ${JSON.stringify(id)} has ${client.assertionAlg})`,
      );
    }
  });
  return problems;
}

/** Under fapi2 every client gets sender-constrained tokens only (DPoP or certificate-bound). */
function fapi2Clients(registry: ClientRegistry, source: string): ClientRegistry {
  const problems = fapi2ClientProblems(registry);
  if (problems.length > 0) throw new ConfigError(problems, source);
  return new Registry(
    registry
      .ids()
      .map((id) =>
        Object.freeze({ ...(registry.get(id) as ClientRecord), requireSenderConstrained: true }),
      ),
  );
}
