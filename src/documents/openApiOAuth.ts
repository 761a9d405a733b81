/**
 * The standard OAuth 2.0 surface in the OpenAPI description, under its own tag: the token
 * endpoint (RFC 6749 §4.4), revocation (RFC 7009), introspection (RFC 7662) and the
 * discovery documents (RFC 8414, RFC 9728), at their default paths. `openApiDocument.ts`
 * merges these in; a gateway serves them at its configured paths, or not at all while
 * `oauth.enabled` is false.
 */

export const OAUTH_TAG = 'OAuth 2.0';

/** The operations' default paths, keyed by the setting that moves them. */
export const OAUTH_DEFAULT_PATHS = {
  tokenPath: '/oauth2/token',
  revocationPath: '/oauth2/revoke',
  introspectionPath: '/oauth2/introspect',
} as const;

const oauthError = (description: string) => ({
  description,
  headers: {
    'Cache-Control': { required: true, schema: { type: 'string', const: 'no-store' } },
  },
  content: { 'application/json': { schema: { $ref: '#/components/schemas/OAuthError' } } },
});

/** A 401 of a request that used HTTP Basic carries the Basic challenge (RFC 6749 §5.2). */
const basicChallenge = (response: ReturnType<typeof oauthError>) => ({
  ...response,
  headers: {
    ...response.headers,
    'WWW-Authenticate': {
      description: 'Present when the request used HTTP Basic.',
      schema: { type: 'string', const: 'Basic realm="portaria"' },
    },
  },
});

const problem = (description: string) => ({
  description,
  content: {
    'application/problem+json': { schema: { $ref: '#/components/schemas/ProblemDetails' } },
  },
});

/** The HTTP-level refusals every OAuth endpoint shares (problem details). */
const httpRefusals = {
  '405': {
    ...problem('Only POST is accepted.'),
    headers: { Allow: { required: true, schema: { type: 'string', const: 'POST' } } },
  },
  '413': problem('The body exceeds `token.bodyLimitBytes`.'),
  '415': problem(
    'Content-Type is not application/x-www-form-urlencoded, or the body is compressed.',
  ),
  '429': {
    ...problem(
      'The token endpoint limits (per address, per client, back-off after failed secrets) are shared by every OAuth endpoint and the contract operation.',
    ),
    headers: {
      'Retry-After': { required: true, schema: { type: 'string', pattern: '^[1-9][0-9]*$' } },
    },
  },
  '503': problem(
    'A store the request needs (assertion replay store, revocation store, key set) is unavailable.',
  ),
} as const;

const clientAuthentication =
  'The client authenticates as at the token endpoint, with exactly one method: `client_secret_basic` (`Authorization: Basic`, id and secret form-urlencoded first, RFC 6749 §2.3.1), `client_secret_post` (`client_id` + `client_secret` in the form) `private_key_jwt` (`client_assertion_type` + `client_assertion`, RFC 7523 §2.2), or `tls_client_auth` / `self_signed_tls_client_auth` (`client_id` alone, with the client certificate of the connection or of a trusted proxy, RFC 8705 §2).';

const formBody = (schema: string) => ({
  required: true,
  content: {
    'application/x-www-form-urlencoded': { schema: { $ref: `#/components/schemas/${schema}` } },
  },
});

const clientAuthFields = {
  client_id: { type: 'string' },
  client_secret: { type: 'string' },
  client_assertion_type: {
    type: 'string',
    const: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
  },
  client_assertion: { type: 'string', description: 'A JWT signed with one of the client keys.' },
} as const;

/** The form of a revocation or introspection request (the token and the client's authentication). */
const tokenForm = {
  type: 'object',
  required: ['token'],
  properties: {
    token: { type: 'string' },
    token_type_hint: { type: 'string' },
    ...clientAuthFields,
  },
};

const metadataResponse = (schema: string, description: string) => ({
  '200': {
    description,
    headers: { 'Cache-Control': { required: true, schema: { type: 'string' } } },
    content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } },
  },
});

export const oauthPaths = {
  [OAUTH_DEFAULT_PATHS.tokenPath]: {
    post: {
      operationId: 'oauthToken',
      tags: [OAUTH_TAG],
      summary: 'Client credentials grant (RFC 6749 §4.4)',
      description: `Issues the same JWT as the contract operation. ${clientAuthentication} \`scope\` narrows the token to some of the client’s scopes; \`resource\` (RFC 8707) selects its audience among the client’s. Path: \`oauth.tokenPath\`.`,
      security: [{ clientSecretBasic: [] }, {}],
      requestBody: formBody('OAuthTokenRequest'),
      responses: {
        '200': {
          description: 'Access token issued (RFC 6749 §5.1).',
          headers: {
            'Cache-Control': { required: true, schema: { type: 'string', const: 'no-store' } },
            Pragma: { required: true, schema: { type: 'string', const: 'no-cache' } },
          },
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/OAuthTokenResponse' } },
          },
        },
        '400': oauthError(
          '`invalid_request` (malformed or repeated parameter, no grant_type, two authentication methods), `unsupported_grant_type`, `invalid_scope`, `invalid_target` (RFC 6749 §5.2, RFC 8707 §2).',
        ),
        '401': basicChallenge(
          oauthError('`invalid_client`: the client could not be authenticated.'),
        ),
        ...httpRefusals,
        '503': problem(
          'No token can be issued now (no active signing key, the client’s revocation pending, or the assertion replay store unreachable).',
        ),
      },
    },
  },
  [OAUTH_DEFAULT_PATHS.revocationPath]: {
    post: {
      operationId: 'oauthRevoke',
      tags: [OAUTH_TAG],
      summary: 'Revoke one of the client’s own tokens (RFC 7009)',
      description: `${clientAuthentication} A token of another client or issuer, an unknown, malformed, expired or already revoked one is answered 200 too, and nothing changes (RFC 7009 §2.2). \`token_type_hint\` is ignored. Path: \`oauth.revocationPath\`.`,
      security: [{ clientSecretBasic: [] }, {}],
      requestBody: formBody('OAuthRevocationRequest'),
      responses: {
        '200': {
          description: 'Done: the token, if it was the client’s own, is revoked on every replica.',
          headers: {
            'Cache-Control': { required: true, schema: { type: 'string', const: 'no-store' } },
          },
        },
        '400': oauthError('`invalid_request` (no `token`, malformed form, repeated parameter).'),
        '401': basicChallenge(oauthError('`invalid_client`.')),
        ...httpRefusals,
      },
    },
  },
  [OAUTH_DEFAULT_PATHS.introspectionPath]: {
    post: {
      operationId: 'oauthIntrospect',
      tags: [OAUTH_TAG],
      summary: 'Introspect a token (RFC 7662)',
      description: `For resource servers: the caller is a client holding the \`introspect\` permission. ${clientAuthentication} The token is verified exactly as the edge verifies bearer tokens (trusted external issuers included). \`token_type_hint\` is ignored. Path: \`oauth.introspectionPath\`.`,
      security: [{ clientSecretBasic: [] }, {}],
      requestBody: formBody('OAuthIntrospectionRequest'),
      responses: {
        '200': {
          description:
            'The token’s state: `{"active": false}` alone for a revoked, expired, foreign or malformed token.',
          headers: {
            'Cache-Control': { required: true, schema: { type: 'string', const: 'no-store' } },
          },
          content: {
            'application/json': {
              schema: { $ref: '#/components/schemas/OAuthIntrospectionResponse' },
            },
          },
        },
        '400': oauthError('`invalid_request` (no `token`, malformed form, repeated parameter).'),
        '401': basicChallenge(oauthError('`invalid_client`.')),
        '403': oauthError('`unauthorized_client`: the client lacks the `introspect` permission.'),
        ...httpRefusals,
      },
    },
  },
  '/.well-known/oauth-authorization-server': {
    get: {
      operationId: 'oauthAuthorizationServerMetadata',
      tags: [OAUTH_TAG],
      summary: 'Authorization server metadata (RFC 8414)',
      description:
        'Served at the path RFC 8414 §3.1 derives from `issuer` (this one for an issuer without a path).',
      security: [],
      responses: metadataResponse('AuthorizationServerMetadata', 'The metadata document.'),
    },
  },
  '/.well-known/oauth-protected-resource': {
    get: {
      operationId: 'oauthProtectedResourceMetadata',
      tags: [OAUTH_TAG],
      summary: 'Protected-resource metadata of the gateway (RFC 9728)',
      description:
        'Each route has its own document at this path followed by its prefix (`/.well-known/oauth-protected-resource/v1/orders`), naming its scopes. Every `WWW-Authenticate: Bearer` challenge of the gateway names the applicable one in `resource_metadata` (RFC 9728 §5.1).',
      security: [],
      responses: metadataResponse('ProtectedResourceMetadata', 'The metadata document.'),
    },
  },
} as const;

const stringList = { type: 'array', items: { type: 'string' } } as const;

export const oauthSchemas = {
  OAuthError: {
    type: 'object',
    required: ['error', 'error_description'],
    additionalProperties: false,
    properties: {
      error: {
        type: 'string',
        enum: [
          'invalid_request',
          'invalid_client',
          'invalid_grant',
          'unauthorized_client',
          'unsupported_grant_type',
          'invalid_scope',
          'invalid_target',
        ],
      },
      error_description: { type: 'string' },
    },
  },
  OAuthTokenRequest: {
    type: 'object',
    required: ['grant_type'],
    properties: {
      grant_type: { type: 'string', const: 'client_credentials' },
      scope: { type: 'string', description: 'A subset of the client’s scopes, space-separated.' },
      resource: {
        type: 'string',
        format: 'uri',
        description: 'RFC 8707: the audience of the token, one of the client’s.',
      },
      ...clientAuthFields,
    },
  },
  OAuthTokenResponse: {
    type: 'object',
    required: ['access_token', 'token_type', 'expires_in', 'scope'],
    additionalProperties: false,
    properties: {
      access_token: { type: 'string' },
      token_type: { type: 'string', const: 'Bearer' },
      expires_in: { type: 'integer', minimum: 1 },
      scope: { type: 'string' },
    },
  },
  // RFC 7009 §2.1 and RFC 7662 §2.1 ask for the same form: the token, an optional hint.
  OAuthRevocationRequest: tokenForm,
  OAuthIntrospectionRequest: tokenForm,
  OAuthIntrospectionResponse: {
    type: 'object',
    required: ['active'],
    properties: {
      active: { type: 'boolean' },
      scope: { type: 'string' },
      client_id: { type: 'string' },
      sub: { type: 'string' },
      aud: { oneOf: [{ type: 'string' }, stringList] },
      iss: { type: 'string' },
      exp: { type: 'integer' },
      iat: { type: 'integer' },
      nbf: { type: 'integer' },
      jti: { type: 'string' },
      token_type: { type: 'string', const: 'Bearer' },
      cnf: {
        type: 'object',
        description: "A certificate-bound token's confirmation (RFC 8705 §3.2).",
        properties: { 'x5t#S256': { type: 'string' } },
      },
    },
  },
  AuthorizationServerMetadata: {
    type: 'object',
    required: ['issuer', 'token_endpoint', 'response_types_supported'],
    properties: {
      issuer: { type: 'string' },
      token_endpoint: { type: 'string' },
      jwks_uri: { type: 'string' },
      scopes_supported: stringList,
      response_types_supported: stringList,
      grant_types_supported: stringList,
      token_endpoint_auth_methods_supported: stringList,
      token_endpoint_auth_signing_alg_values_supported: stringList,
      revocation_endpoint: { type: 'string' },
      revocation_endpoint_auth_methods_supported: stringList,
      revocation_endpoint_auth_signing_alg_values_supported: stringList,
      introspection_endpoint: { type: 'string' },
      introspection_endpoint_auth_methods_supported: stringList,
      introspection_endpoint_auth_signing_alg_values_supported: stringList,
      protected_resources: stringList,
      tls_client_certificate_bound_access_tokens: { type: 'boolean', const: true },
      dpop_signing_alg_values_supported: stringList,
      mtls_endpoint_aliases: {
        type: 'object',
        description: 'The endpoints where clients present certificates (RFC 8705 §5).',
        properties: {
          token_endpoint: { type: 'string' },
          revocation_endpoint: { type: 'string' },
          introspection_endpoint: { type: 'string' },
        },
      },
    },
  },
  ProtectedResourceMetadata: {
    type: 'object',
    required: ['resource'],
    properties: {
      resource: { type: 'string' },
      authorization_servers: stringList,
      scopes_supported: stringList,
      bearer_methods_supported: stringList,
      tls_client_certificate_bound_access_tokens: { type: 'boolean', const: true },
      dpop_signing_alg_values_supported: stringList,
    },
  },
} as const;

export const oauthSecuritySchemes = {
  clientSecretBasic: {
    type: 'http',
    scheme: 'basic',
    description:
      'OAuth client authentication `client_secret_basic`: the client id and secret, each form-urlencoded, as the Basic user and password (RFC 6749 §2.3.1).',
  },
} as const;
