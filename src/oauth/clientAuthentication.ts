/**
 * Client authentication at the OAuth 2.0 endpoints, one step every endpoint shares (token,
 * revocation, introspection). Exactly one method per request (RFC 6749 §2.3; two →
 * `invalid_request`, none → `invalid_client`):
 *
 *   client_secret_basic  `Authorization: Basic`, the id and the secret each
 *                        form-urlencoded before the Base64 encoding (RFC 6749 §2.3.1)
 *   client_secret_post   `client_id` and `client_secret` in the form
 *   private_key_jwt      `client_assertion_type` + `client_assertion` (RFC 7523 §2.2),
 *                        `clientAssertion.ts`
 *   tls_client_auth, self_signed_tls_client_auth   `client_id` alone in the form, with
 *                        the connection's client certificate (RFC 8705 §2),
 *                        `certificateAuthentication.ts`; without a certificate it is
 *                        no client authentication
 *
 * The claimed client is then checked within the token endpoints' limits
 * (`authenticateWithinLimits`: pair back-off, one check at a time for a failing pair,
 * client bucket, check, record) — the same sequence, limiter and back-off as the
 * contract's operation, so guesses spread over both endpoints count together. Secrets go
 * through the same authenticator (`clients/authenticateClient.ts`): an unknown client
 * and a wrong secret cost the same work and get the same answer; so do an unknown
 * client's assertion and a forged one of a real client (a signature check either way,
 * `clientAssertion.ts`). A client must also allow the method it used (`authMethods`),
 * checked after its credentials, so the answer says nothing more; for a certificate, which
 * of RFC 8705's two methods applies is the client's, so its methods are read first (no
 * secret or signature check is spent either way). A secret or an assertion with a
 * certificate authenticates by itself: the certificate then only binds the token.
 *
 * The caller takes the address limit before reading the body (as the token operation).
 * With tracing on, the whole step (method, limits, secret or assertion checks) is the
 * `authenticate_client` span, ended with the private reason of a refusal.
 */
import type { ClientAuthenticator } from '../clients/authenticateClient.js';
import type { ClientRecord, ClientRegistry } from '../clients/clientRegistry.js';
import type { AuthMethod } from '../clients/oauthClientFields.js';
import type { ClientCertificate } from '../domain/clientCertificate.js';
import { isPortariaError } from '../errors.js';
import {
  authenticateWithinLimits,
  type CredentialCheck,
  type LimitedAuthenticationDeps,
} from '../limits/limitedAuthentication.js';
import { sourceAddress } from '../limits/sourceAddress.js';
import type { ExchangeSteps } from '../token/tokenService.js';
import { authenticateByCertificate } from './certificateAuthentication.js';
import {
  type AssertionSettings,
  assertionSubject,
  JWT_BEARER_ASSERTION,
  refusedAfterDecoyCheck,
  verifyClientAssertion,
} from './clientAssertion.js';
import { decodeFormComponent } from './formBody.js';
import { credentialsRefused, OAuthError } from './oauthError.js';

/** What client authentication reads of the request besides its form. */
export interface ClientAuthenticationCall {
  /** The `Authorization` header, if any (the framing step refused a repeated one). */
  readonly authorization: string | undefined;
  /** The caller's address, as `server.trustedProxies` decides it. */
  readonly clientAddress: string;
  /** Observes client authentication and signing (tracing on). */
  readonly steps?: ExchangeSteps;
  /** The request's client certificate (TLS or a trusted proxy's header); absent: none. */
  readonly certificate?: ClientCertificate | null;
}

export interface ClientAuthenticationDeps extends LimitedAuthenticationDeps {
  /** The current client registry (replaced on reload). */
  readonly registry: () => ClientRegistry;
  /** The current secret authenticator, built from that registry. */
  readonly authenticate: () => ClientAuthenticator;
  readonly assertions: AssertionSettings;
}

export interface AuthenticatedClient {
  readonly client: ClientRecord;
  readonly method: AuthMethod;
  /**
   * A certificate no CA verified that the client's own keys proved
   * (`self_signed_tls_client_auth`): its tokens are bound to it (RFC 8705 §2.2, §3).
   */
  readonly proven: ClientCertificate | null;
}

type Credentials =
  | {
      readonly method: 'client_secret_basic' | 'client_secret_post';
      readonly id: string;
      readonly secret: string;
    }
  | { readonly method: 'private_key_jwt'; readonly id: string; readonly assertion: string }
  | { readonly method: 'tls'; readonly id: string; readonly certificate: ClientCertificate };

/** Authenticates the client of an OAuth request; throws `OAuthError` (or a 429/503 `PortariaError`). */
export async function authenticateOAuthClient(
  form: ReadonlyMap<string, string>,
  call: ClientAuthenticationCall,
  deps: ClientAuthenticationDeps,
): Promise<AuthenticatedClient> {
  const authenticated = call.steps?.('authenticate_client');
  try {
    const result = await authenticate(form, call, deps);
    authenticated?.();
    return result;
  } catch (error) {
    authenticated?.(refusalReason(error));
    throw error;
  }
}

/** The span's private reason: a bounded code, never a message (which could echo input). */
function refusalReason(error: unknown): string {
  if (isPortariaError(error)) return error.reason;
  return 'error';
}

async function authenticate(
  form: ReadonlyMap<string, string>,
  call: ClientAuthenticationCall,
  deps: ClientAuthenticationDeps,
): Promise<AuthenticatedClient> {
  const credentials = credentialsOf(form, call.authorization, call.certificate ?? null);
  const address = sourceAddress(call.clientAddress);
  return authenticateWithinLimits(credentials.id, address, CLIENT_CREDENTIALS, credentials, deps);
}

/** The credentials' check; a refusal of them is `invalid_client`. */
const CLIENT_CREDENTIALS: CredentialCheck<
  Credentials,
  ClientAuthenticationDeps,
  AuthenticatedClient
> = check;

/** The one method the request uses, and the client it names. */
function credentialsOf(
  form: ReadonlyMap<string, string>,
  authorization: string | undefined,
  certificate: ClientCertificate | null,
): Credentials {
  const postSecret = form.get('client_secret');
  const assertion = form.get('client_assertion');
  const assertionType = form.get('client_assertion_type');
  const formId = form.get('client_id');
  const used =
    (authorization === undefined ? 0 : 1) +
    (postSecret === undefined ? 0 : 1) +
    (assertion === undefined && assertionType === undefined ? 0 : 1);
  if (used > 1) {
    throw new OAuthError('invalid_request', 'Use exactly one client authentication method.', {
      reason: 'several-client-auth',
    });
  }
  if (authorization !== undefined) {
    const basic = parseBasic(authorization);
    if (formId !== undefined && formId !== basic.id) throw idMismatch();
    return { method: 'client_secret_basic', ...basic };
  }
  if (postSecret !== undefined) {
    if (formId === undefined) {
      throw new OAuthError('invalid_request', 'client_secret needs client_id.', {
        reason: 'missing-field',
      });
    }
    return { method: 'client_secret_post', id: formId, secret: postSecret };
  }
  if (assertion !== undefined || assertionType !== undefined) {
    if (assertion === undefined || assertionType === undefined) {
      throw new OAuthError(
        'invalid_request',
        'client_assertion and client_assertion_type go together.',
        { reason: 'missing-field' },
      );
    }
    if (assertionType !== JWT_BEARER_ASSERTION) {
      throw new OAuthError(
        'invalid_client',
        `client_assertion_type must be ${JWT_BEARER_ASSERTION}.`,
        {
          reason: 'assertion-type',
        },
      );
    }
    const id = assertionSubject(assertion);
    if (formId !== undefined && formId !== id) throw idMismatch();
    return { method: 'private_key_jwt', id, assertion };
  }
  // RFC 8705 §2: the certificate authenticates; client_id says which client it claims.
  if (formId !== undefined && certificate !== null) {
    return { method: 'tls', id: formId, certificate };
  }
  throw new OAuthError('invalid_client', 'Client authentication is required.', {
    reason: 'no-client-auth',
  });
}

function idMismatch(): OAuthError {
  return new OAuthError('invalid_client', 'client_id does not name the authenticated client.', {
    reason: 'client-id-mismatch',
  });
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * `Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1, RFC 7617 §2): the
 * scheme is case-insensitive, the Base64 canonical, the decoded text split at its first
 * `:`, and each side form-decoded (`+` is a space, `%XX` a byte; malformed: refused).
 */
function parseBasic(header: string): { id: string; secret: string } {
  const space = header.indexOf(' ');
  const scheme = space === -1 ? header : header.slice(0, space);
  const encoded = space === -1 ? '' : header.slice(space + 1).trim();
  if (scheme.toLowerCase() !== 'basic') throw badBasic('other-scheme');
  if (encoded.length % 4 !== 0 || !BASE64.test(encoded)) throw badBasic('bad-basic');
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.toString('base64') !== encoded) throw badBasic('bad-basic');
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw badBasic('bad-basic');
  }
  const colon = text.indexOf(':');
  if (colon === -1) throw badBasic('bad-basic');
  try {
    const id = decodeFormComponent(text.slice(0, colon));
    const secret = decodeFormComponent(text.slice(colon + 1));
    if (id === '' || secret === '') throw badBasic('bad-basic');
    return { id, secret };
  } catch (error) {
    if (error instanceof OAuthError && error.reason === 'form-malformed')
      throw badBasic('bad-basic');
    throw error;
  }
}

function badBasic(reason: 'bad-basic' | 'other-scheme'): OAuthError {
  return new OAuthError(
    'invalid_client',
    'The Authorization header must carry HTTP Basic client credentials, each form-urlencoded (RFC 6749 §2.3.1).',
    { reason },
  );
}

/** Checks the credentials; the client and how it authenticated, or `OAuthError('invalid_client')`. */
async function check(
  credentials: Credentials,
  deps: ClientAuthenticationDeps,
): Promise<AuthenticatedClient> {
  if (credentials.method === 'tls') {
    const registry = deps.registry();
    deps.assertions.keys.sync(registry);
    const client = registry.get(credentials.id);
    if (client === undefined) throw credentialsRefused('unknown-client');
    const { method, proven } = await authenticateByCertificate(
      client,
      credentials.certificate,
      deps.assertions.keys,
      deps.assertions.clock,
    );
    if (client.disabled) throw credentialsRefused('disabled-client');
    return { client, method, proven };
  }
  if (credentials.method === 'private_key_jwt') {
    const registry = deps.registry();
    deps.assertions.keys.sync(registry);
    const client = registry.get(credentials.id);
    // As costly as a known client's forged assertion: the answer's timing names no client.
    if (client === undefined)
      return refusedAfterDecoyCheck(credentials.assertion, 'unknown-client');
    if (!client.authMethods.includes('private_key_jwt'))
      return refusedAfterDecoyCheck(credentials.assertion, 'auth-method-not-allowed');
    await verifyClientAssertion(credentials.assertion, client, deps.assertions);
    if (client.disabled) throw credentialsRefused('disabled-client');
    return { client, method: 'private_key_jwt', proven: null };
  }
  const result = await deps.authenticate()(credentials.id, credentials.secret);
  if (!result.ok) throw credentialsRefused(result.reason);
  if (!result.client.authMethods.includes(credentials.method))
    throw credentialsRefused('auth-method-not-allowed');
  return { client: result.client, method: credentials.method, proven: null };
}
