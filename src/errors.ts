/**
 * The closed catalogue of request-time errors.
 *
 * Every refusal a client can see is one of these codes. Each code has a fixed HTTP
 * status and a fixed public title; the problem-details `tipo` is the configured
 * base URI plus the code. The `detail` of a thrown error is public (it names the
 * offending field, never a value); the `reason` is private: it goes to the log and
 * to a bounded metric label, never to the client. Reasons are a closed set too
 * (`FAILURE_REASONS`): a new one is added here or it does not typecheck.
 *
 * Anything thrown that is not a `PortariaError` becomes a 500 with no body.
 *
 * One error type for every entry: the entry that answers chooses the shape. The
 * contract's operation, the edge and the admin API write problem details; the OAuth
 * endpoints write an error carrying an RFC 6749 code (`oauth`) as RFC 6749 §5.2 JSON,
 * and HTTP-level refusals (405, 413, 415, 429, 503: RFC 6749 has no code for them) as
 * problem details. A refusal's `WWW-Authenticate` challenge is no header of the error
 * either: the entry writes it from the code (`http/challenge.ts`).
 */

export const PROBLEMS = {
  'invalid-request': { status: 400, title: 'Invalid request' },
  'invalid-path': { status: 400, title: 'Ambiguous request path' },
  'invalid-client': { status: 401, title: 'Client authentication failed' },
  'token-missing': { status: 401, title: 'Access token missing' },
  'token-invalid': { status: 401, title: 'Access token invalid' },
  'token-expired': { status: 401, title: 'Access token expired' },
  'token-revoked': { status: 401, title: 'Access token revoked' },
  // Certificate-bound tokens (RFC 8705 §3): not the bound certificate, or not bound at all.
  'token-binding-failed': { status: 401, title: 'Access token bound to another certificate' },
  'token-binding-required': { status: 401, title: 'Certificate-bound access token required' },
  // DPoP (RFC 9449 §7.1): the request's proof does not hold.
  'dpop-proof-invalid': { status: 401, title: 'DPoP proof invalid' },
  // Client certificates (mutual TLS, RFC 8705): none presented, or one not verified.
  'certificate-required': { status: 401, title: 'Client certificate required' },
  'certificate-invalid': { status: 401, title: 'Client certificate invalid' },
  'insufficient-scope': { status: 403, title: 'Insufficient scope' },
  // A decision asked by a peer that is not one of server.trustedProxies (authorizer/).
  'untrusted-peer': { status: 403, title: 'Not a trusted proxy' },
  'not-found': { status: 404, title: 'Not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  'request-timeout': { status: 408, title: 'Request timeout' },
  'payload-too-large': { status: 413, title: 'Payload too large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type' },
  'too-many-requests': { status: 429, title: 'Too many requests' },
  // A partner's rate or quota on an API route (pipeline/quotaStep.ts).
  'quota-exceeded': { status: 429, title: 'Quota exceeded' },
  'headers-too-large': { status: 431, title: 'Request header fields too large' },
  'not-implemented': { status: 501, title: 'Not implemented' },
  'upstream-unavailable': { status: 502, title: 'Upstream unavailable' },
  'service-unavailable': { status: 503, title: 'Service unavailable' },
  'issuer-unavailable': { status: 503, title: 'Token issuer unavailable' },
  'upstream-timeout': { status: 504, title: 'Upstream timeout' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemCode = keyof typeof PROBLEMS;

export const PROBLEM_CODES = Object.keys(PROBLEMS) as ProblemCode[];

/**
 * Private failure reasons finer than a code: the access line's `reason`, the `reason`
 * label of `portaria_auth_failures_total` and of the verification metric. Never sent to
 * a client. A refusal without a finer reason reports its code (`FailureReason`).
 */
export const FAILURE_REASONS = [
  // Framing: Node's parser and the checks before routing (RFC 9112).
  'bad-framing', // the parser refused the bytes as HTTP/1.1
  'cl-and-te', // both Content-Length and Transfer-Encoding (RFC 9112 §6.1)
  'duplicate-content-length', // Content-Length sent twice
  'header-overflow', // the parser's header size limit
  'header-lines', // more header lines than server.maxHeaderLines
  'multiple-content-type', // Content-Type sent more than once
  'multiple-host', // Host sent more than once (RFC 9112 §3.2)
  'missing-host', // an HTTP/1.1 request without Host
  'invalid-host', // Host is not a host and port
  'http10-transfer-encoding', // Transfer-Encoding on an HTTP/1.0 request
  'transfer-coding', // a transfer coding other than chunked
  'connect', // a CONNECT request
  'trace', // a TRACE request
  'method', // a method the path does not accept
  // Request path (invalid-path).
  'not-origin-form', // the target is not an absolute path
  'empty-segment', // `//`
  'dot-segment', // a `.` or `..` segment
  'bad-percent', // malformed percent-encoding
  'encoded', // an encoded `.`, `/`, `\`, `;`, `?`, `#` or control
  'encoded-unreserved', // an encoded letter, digit, `-`, `_` or `~`
  'double-encoded', // `%25` followed by the encoding of a refused byte
  'backslash', // a raw `\`
  'fragment', // a `#` in the target
  'invalid-character', // a byte outside printable ASCII
  'path-parameter', // a `;` parameter
  'trailing-dot', // a segment ending in `.`
  'trailing-space', // a segment ending in a space
  'windows-alias', // an alternate data stream or a short name (`NAME~1`)
  'not-utf8', // percent-encoded bytes that are not UTF-8
  'ambiguous-unicode', // characters that normalise to others, or invisible ones
  // Routing and upgrades.
  'no-route', // no route serves the path
  'decisions-only', // mode: authorizer forwards nothing: a protected request on server.port
  // DPoP (RFC 9449; verify/dpopProof.ts, pipeline/dpopProofStep.ts).
  'dpop-malformed', // the proof is not a compact JWS of JSON
  'dpop-typ', // typ is not dpop+jwt
  'dpop-alg', // none, HMAC, or an algorithm not allowed
  'dpop-jwk', // no jwk, or one with private members
  'dpop-signature', // the proof does not verify with its jwk
  'dpop-htm', // the proof is for another method
  'dpop-htu', // the proof is for another URI
  'dpop-iat', // iat outside the proof window
  'dpop-jti', // no jti
  'dpop-ath', // the proof names another access token
  'dpop-nonce', // no current server nonce
  'dpop-key-mismatch', // the proof's key is not the token's cnf.jkt
  'dpop-replayed', // the proof's jti was used before
  'dpop-proof-missing', // the DPoP scheme without a proof
  'dpop-proof-repeated', // more than one DPoP header
  'dpop-as-bearer', // a DPoP-bound token sent with the Bearer scheme
  'dpop-not-bound', // the DPoP scheme with a token bound to no key
  'bearer-with-proof', // a Bearer token not bound to a key, with a proof beside it
  'not-sender-constrained', // a bearer token where sender-constrained ones are required
  // Decisions (authorizer/).
  'peer-not-trusted', // the peer asking is not one of server.trustedProxies
  'original-request', // the original method or URI is missing, repeated or malformed
  'no-decision-entry', // no decision entry has this path
  'refusal-lapsed', // a second ask about a refused request that would now be allowed (503)
  'upgrade-on-open-path', // an upgrade on the token, JWKS or OpenAPI path
  'upgrade-with-body', // an upgrade request with a body
  'upgrade-offer-chunked', // an upgrade offer with a chunked body
  'unsupported-upgrade', // an upgrade other than WebSocket over GET
  'upgrade-error', // an unexpected failure while upgrading (500)
  // Bodies and JSON (token request, admin API).
  'content-type', // the media type is not application/json
  'content-encoding', // a compressed body
  'body-too-large', // a body over the limit
  'body-not-utf8', // a body that is not UTF-8
  'body-not-json', // a body that is not JSON
  'body-not-object', // a JSON body that is not an object
  'duplicate-key', // a top-level property given twice
  'unknown-property', // a property the schema does not allow
  'missing-field', // a required property is absent
  'wrong-type', // a property of the wrong type
  'empty-field', // a required string is empty
  // Client authentication at the token endpoint (one public answer, invalid-client).
  'unknown-client', // no client has this id
  'bad-secret', // the secret matches none of the client's
  'secret-expired', // the secret matched but has expired
  'disabled-client', // the client is disabled
  'client-revocation-pending', // the client's revocation cut-off still lies ahead
  // OAuth 2.0 endpoints (RFC 6749 §5.2 answers; src/oauth/).
  'form-malformed', // bad percent-encoding or not UTF-8 in the form
  'form-repeated', // a form parameter given twice (RFC 6749 §3.2)
  'several-resources', // more than one `resource` (RFC 8707)
  'several-client-auth', // more than one client authentication method
  'no-client-auth', // no client authentication
  'bad-basic', // a malformed Basic header (RFC 6749 §2.3.1)
  'client-id-mismatch', // client_id differs from the authenticated client
  'auth-method-not-allowed', // the client does not allow this method
  'assertion-type', // client_assertion_type is not jwt-bearer
  'assertion-malformed', // the assertion is not a compact JWS with JSON claims
  'assertion-alg', // none, HMAC, or not the client's pinned alg
  'assertion-claims', // iss and sub are not both the client id
  'assertion-no-kid', // the assertion's header names no key
  'assertion-unknown-key', // the client has no key with this kid and alg
  'client-keys-unavailable', // the client's JWKS file or URI is unusable
  'assertion-signature', // the assertion's signature does not verify
  'assertion-audience', // aud names neither the token endpoint nor the issuer
  'assertion-expired', // exp absent or past
  'assertion-too-long', // exp too far ahead
  'assertion-not-yet-valid', // nbf or iat ahead
  'assertion-no-jti', // jti absent or too long
  'assertion-replayed', // the jti was used before (RFC 7523 §3)
  'replay-store-unavailable', // the replay store cannot answer (503)
  'grant-type-missing', // no grant_type
  'grant-type-unsupported', // a grant type other than client_credentials
  'scope-not-granted', // a scope the client does not have
  'resource-malformed', // resource is not an absolute URI without fragment
  'resource-not-allowed', // resource is not among the client's audiences
  'introspection-not-permitted', // the client lacks the `introspect` permission (RFC 7662)
  // A client certificate in a trusted proxy's header (400; src/certificates/).
  'certificate-header-malformed', // not one certificate in the header's format
  'certificate-header-repeated', // the certificate header sent more than once
  'certificate-header-too-large', // a certificate header over the size bound
  'certificate-header-no-cert', // an XFCC element without Cert (only its Hash)
  'certificate-hash-mismatch', // an XFCC Hash that is not the certificate's SHA-256
  // profile fapi-br (400; src/http/interactionIdStep.ts).
  'interaction-id-malformed', // x-fapi-interaction-id is not a UUID
  // Per-partner quotas on API routes (pipeline/quotaStep.ts).
  'quota-rate', // the policy's rate (token bucket) is exceeded (429)
  'quota-window', // the policy's quota is used up for this window (429)
  'quota-store-unavailable', // the quota store cannot answer, whenRedisDown: closed (503)
  // Token-endpoint limits (429).
  'rate-limit-address', // the address's request rate
  'rate-limit-client', // the client's request rate
  'failed-secret-backoff', // back-off after failed secrets from this (client, address)
  // Bearer credentials (RFC 6750 §2.1).
  'no-authorization', // no Authorization header
  'other-scheme', // a scheme other than Bearer
  'multiple-authorization', // Authorization sent more than once
  'empty-token', // `Bearer` with no token
  'token-too-long', // a token over the length limit
  'token-in-query', // a token in the query string (RFC 6750 §2.3)
  // Token verification, in its order (RFC 7515, RFC 7519, RFC 9068).
  'malformed', // not a compact JWS, or jose found it malformed
  'non-canonical', // not canonical base64url, or a signature of the wrong length
  'malformed-header', // the protected header is not a JSON object
  'malformed-payload', // the payload is not a JSON object
  'alg-not-allowed', // an algorithm no issuer (or not this issuer) accepts
  'unknown-issuer', // `iss` names no trusted issuer
  'no-kid', // no `kid` in the header
  'unknown-kid', // the issuer has no key with this `kid`
  'alg-mismatch', // the key is for another algorithm
  'bad-signature', // the signature does not verify
  'unsupported', // a JOSE feature jose does not support
  'expired', // `exp` has passed
  'not-yet-valid', // `nbf` lies ahead
  'wrong-issuer', // `iss` differs from the issuer's
  'wrong-audience', // `aud` names none of the accepted audiences
  'wrong-typ', // `typ` is not `at+jwt` (RFC 9068 §2.1)
  'bad-iat', // `iat` absent or not a number
  'bad-exp', // `exp` absent or not a number
  'missing-claim', // `sub` or `jti` is absent
  'iat-in-future', // `iat` lies ahead beyond the skew
  'lifetime-too-long', // `exp − iat` over the issuer's maximum lifetime
  'bad-claims', // another claim failed, or has the wrong type or form
  'unrevocable-ids', // a `jti` or client id the admin API could not name
  'revoked', // the token or its client is revoked
  'audience-not-allowed', // `aud` lacks the audience the route requires (RFC 8707)
  // Certificate binding (token-binding-failed, token-binding-required; RFC 8705 §3).
  'bound-no-certificate', // a bound token came without a client certificate
  'certificate-mismatch', // a bound token came with another certificate
  'bound-certificate-invalid', // the bound certificate came, expired, not yet valid or revoked
  'bad-cnf', // `cnf` is not an object, or its `x5t#S256` is not a thumbprint
  'not-bound', // a bearer token where the route or the client requires a bound one
  // Client certificates (certificate-required, certificate-invalid).
  'certificate-missing', // no client certificate came
  'certificate-expired', // its notAfter has passed
  'certificate-not-yet-valid', // its notBefore lies ahead
  'certificate-untrusted', // no trusted CA issued it, or its revocation status is unknown
  'certificate-revoked', // a CRL of its issuer lists it
  'certificate-self-signed', // signed by its own key, not by a trusted CA
  'certificate-identity-mismatch', // tls_client_auth: it names another identity (RFC 8705 §2.1)
  'certificate-key-mismatch', // self_signed_tls_client_auth: its key is none of the client's
  'error', // an unexpected error, not a refusal (verification metric only)
  // Keys.
  'no-active-key', // no signing key is active
  'issuer-keys-missing', // an issuer's key set never loaded
  'issuer-keys-stale', // an issuer's key set is older than its maximum age
  // Revocation and admin API.
  'revocation-stale', // the revocation list cannot be confirmed current
  'admin-api-off', // no admin token is configured
  'admin-token-invalid', // the admin token is wrong, or sent twice
  'revocation-store-failed', // a revocation could not be stored
  'jti-xor-client', // not exactly one of jti and clientId
  'field-mismatch', // a field that belongs to the other kind of revocation
  'bad-jti', // a jti that cannot be a token id
  'bad-client-id', // a clientId that cannot be a client id
  'expires-in-past', // expiresAt has passed
  'expires-too-late', // expiresAt beyond any token's lifetime
  'cut-off-in-future', // issuedBefore lies ahead
  'bad-issued-before', // issuedBefore is neither a date-time nor seconds
  // Upstreams (a timeout is its code, upstream-timeout) and shutdown.
  'upstream-refused', // no connection to the upstream
  'upstream-reset', // the upstream connection broke mid-exchange
  'upstream-error', // any other upstream failure
  'shutting-down', // refused while draining
  'shutdown', // a response cut short at the end of the shutdown grace
  'shutdown-grace', // a request with no answer at the end of the shutdown grace
] as const;

/** RFC 6749 §5.2 codes and RFC 8707 §2 `invalid_target`, with the problem code of their status. */
export const OAUTH_ERRORS = {
  invalid_request: 'invalid-request',
  invalid_client: 'invalid-client',
  invalid_grant: 'invalid-request',
  unauthorized_client: 'invalid-request',
  unsupported_grant_type: 'invalid-request',
  invalid_scope: 'invalid-request',
  invalid_target: 'invalid-request',
  // RFC 9449 §5.1: the token request's DPoP proof does not hold.
  invalid_dpop_proof: 'invalid-request',
  // RFC 9449 §8.1: the proof must carry the nonce the `DPoP-Nonce` header gives.
  use_dpop_nonce: 'invalid-request',
} as const satisfies Record<string, ProblemCode>;

export type OAuthErrorCode = keyof typeof OAUTH_ERRORS;

/** A private failure reason: one of `FAILURE_REASONS`, or the code when none is finer. */
export type FailureReason = (typeof FAILURE_REASONS)[number] | ProblemCode;

/** A refusal with a public code and detail, and a private reason for logs and metrics. */
export class PortariaError extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly title: string;
  /** Public explanation of this occurrence. Names fields, never echoes secrets. */
  readonly detail: string;
  /** Private, bounded reason (a short identifier) for the log and metric labels. */
  readonly reason: FailureReason;
  /** Extra response headers (e.g. `Allow`, `Retry-After`); never the challenge. */
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** The RFC 6749 §5.2 code the OAuth endpoints answer with; absent: problem details there too. */
  readonly oauth: OAuthErrorCode | undefined;

  constructor(
    code: ProblemCode,
    detail: string,
    options: {
      reason?: FailureReason;
      headers?: Record<string, string>;
      cause?: unknown;
      oauth?: OAuthErrorCode;
    } = {},
  ) {
    super(`${code}: ${detail}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PortariaError';
    this.code = code;
    this.status = PROBLEMS[code].status;
    this.title = PROBLEMS[code].title;
    this.detail = detail;
    this.reason = options.reason ?? code;
    this.headers = options.headers;
    this.oauth = options.oauth;
  }
}

export function isPortariaError(value: unknown): value is PortariaError {
  return value instanceof PortariaError;
}

/**
 * The problem-details body (RFC 9457 semantics, the contract's field names): `tipo` is
 * the configured base plus the code; `instancia` the request's path and id.
 */
export function problemJson(error: PortariaError, typeBase: string, instance: string): string {
  return JSON.stringify({
    tipo: `${typeBase}${error.code}`,
    titulo: error.title,
    status: error.status,
    detalhe: error.detail,
    instancia: instance,
  });
}

/** The RFC 6749 §5.2 body of an error with an OAuth code (`oauth`). */
export function oauthErrorJson(error: PortariaError): string {
  return JSON.stringify({ error: error.oauth, error_description: error.detail });
}
