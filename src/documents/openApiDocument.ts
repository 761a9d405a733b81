/**
 * The OpenAPI 3.1 description of what Portaria serves itself (the token operation, the
 * public key set, this document, the standard OAuth 2.0 surface: `openApiOAuth.ts`) and of
 * the bearer scheme every other path requires.
 * `openapi.json` at the repository root is generated from this object
 * (`npm run openapi`); a test fails when the two drift apart. It offers both token
 * result shapes; a running gateway serves `openApiDocumentFor(responseFields)`, which
 * names the one it emits.
 */
import type { ResponseFieldSet } from '../config/types.js';
import {
  OAUTH_DEFAULT_PATHS,
  oauthPaths,
  oauthSchemas,
  oauthSecuritySchemes,
} from './openApiOAuth.js';

const problemRef = { $ref: '#/components/schemas/ProblemDetails' } as const;
const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: problemRef } },
});

export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Portaria — integration API access tokens',
    version: '1.0',
    description:
      'Issues access tokens for client credentials and verifies `Authorization: Bearer` on every other request before forwarding it to the upstream services. ' +
      'Token results use the reference field names (`token_de_acesso`, …) by default; a gateway configured with `token.responseFields: guide` emits the authentication guide names (`accesstoken`, …) instead. ' +
      'Errors are problem details with the fields tipo, titulo, status, detalhe, instancia.',
  },
  servers: [{ url: '/' }],
  security: [{ bearerAuth: [] }],
  paths: {
    '/v1/authentication/accesstoken': {
      post: {
        operationId: 'generateAccessToken',
        tags: ['authentication'],
        summary: 'Exchange client credentials for an access token',
        security: [],
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/TokenRequest' } },
          },
        },
        responses: {
          '200': {
            description: 'Access token issued.',
            headers: {
              'Cache-Control': { required: true, schema: { type: 'string', const: 'no-store' } },
              Pragma: { required: true, schema: { type: 'string', const: 'no-cache' } },
            },
            content: {
              'application/json': {
                schema: {
                  oneOf: [
                    { $ref: '#/components/schemas/TokenResult' },
                    { $ref: '#/components/schemas/TokenResultGuide' },
                  ],
                },
              },
            },
          },
          '400': problem(
            'The token request is invalid: the body is not UTF-8 JSON, not an object, or has a missing, empty, non-string, extra or duplicated field; or the HTTP message is malformed (`Content-Length` with `Transfer-Encoding`, a missing, repeated or invalid `Host`, a repeated `Content-Type`, `Transfer-Encoding` in HTTP/1.0, an `Upgrade`). `detalhe` names what is wrong.',
          ),
          '401': problem(
            'The client credentials were not accepted (unknown client, wrong or expired secret, disabled client, a client allowing no secret method: one answer).',
          ),
          '405': {
            ...problem('Only POST is accepted.'),
            headers: { Allow: { required: true, schema: { type: 'string', const: 'POST' } } },
          },
          '408': problem(
            'The request (headers or body) did not arrive within the server time limits; the connection is closed.',
          ),
          '413': problem('The body exceeds the configured limit (default 16 KiB).'),
          '415': problem('Content-Type is not application/json, or the body is compressed.'),
          '431': problem('The request headers exceed the configured size limit.'),
          '429': {
            ...problem(
              'Too many token requests from this address or for this client, or this address must wait after repeated wrong secrets for this client. The request was not processed.',
            ),
            headers: {
              'Retry-After': {
                required: true,
                description: 'Seconds to wait before trying again (at least 1).',
                schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
              },
            },
          },
          '500': { description: 'Unexpected server failure; no body.' },
          '501': problem(
            'The body is sent in a transfer coding other than chunked (e.g. `Transfer-Encoding: gzip, chunked`), which the gateway does not decode.',
          ),
          '503': {
            ...problem(
              "No token can be issued now: no signing key is active (the key schedule leaves none), or the client's tokens are being revoked up to a moment still ahead (`Retry-After` gives the seconds until it has passed). The request was not processed; retry later.",
            ),
            headers: {
              'Retry-After': {
                description:
                  "Seconds until the client's revocation cut-off has passed (only in that case).",
                schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
              },
            },
          },
        },
      },
    },
    '/.well-known/jwks.json': {
      get: {
        operationId: 'getSigningKeys',
        tags: ['keys'],
        summary: 'Public keys that verify the access tokens (RFC 7517)',
        security: [],
        responses: {
          '200': {
            description: 'The public signing keys.',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Jwks' } } },
          },
        },
      },
    },
    '/v1/openapi.json': {
      get: {
        operationId: 'getOpenApiDescription',
        tags: ['meta'],
        summary: 'This document',
        security: [],
        responses: {
          '200': { description: 'The OpenAPI description.', content: { 'application/json': {} } },
        },
      },
    },
    ...oauthPaths,
  },
  components: {
    securitySchemes: {
      ...oauthSecuritySchemes,
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description:
          'Every request other than the open operations above carries `Authorization: Bearer <access token>`. ' +
          'Refusals: 401 (token missing, invalid, expired or revoked, or not for the route’s audience; `WWW-Authenticate: Bearer` per RFC 6750, with `resource_metadata` per RFC 9728 while the OAuth surface is on), 403 (a scope the route requires is missing), ' +
          '400 (ambiguous path), 404 (no route), 502/504 (upstream unavailable / too slow), all as problem details.',
      },
    },
    schemas: {
      ...oauthSchemas,
      TokenRequest: {
        type: 'object',
        additionalProperties: false,
        required: ['clientId', 'clientSecret'],
        properties: {
          clientId: { type: 'string', minLength: 1 },
          clientSecret: { type: 'string', minLength: 1 },
        },
      },
      TokenResult: {
        type: 'object',
        description: 'Token result with the reference field names (the default).',
        additionalProperties: false,
        required: ['token_de_acesso', 'expira_em_segundos', 'expira_em', 'tipo_de_token', 'escopo'],
        properties: {
          token_de_acesso: { type: 'string', description: 'The access token (a JWT, RFC 9068).' },
          expira_em_segundos: {
            type: 'integer',
            format: 'int32',
            description: 'Seconds until expiry.',
          },
          expira_em: {
            type: 'string',
            format: 'date-time',
            readOnly: true,
            description: 'Moment of expiry, ISO 8601 UTC with milliseconds.',
          },
          tipo_de_token: { type: 'string', const: 'Bearer' },
          escopo: { type: 'string', description: 'Granted scopes, space-separated.' },
        },
      },
      TokenResultGuide: {
        type: 'object',
        description:
          'Token result with the authentication guide field names (`token.responseFields: guide`).',
        additionalProperties: false,
        required: ['accesstoken', 'expiresIn', 'expiresAt', 'tokenType', 'scope'],
        properties: {
          accesstoken: { type: 'string' },
          expiresIn: { type: 'integer', format: 'int32' },
          expiresAt: { type: 'string', format: 'date-time' },
          tokenType: { type: 'string', const: 'Bearer' },
          scope: { type: 'string' },
        },
      },
      ProblemDetails: {
        type: 'object',
        additionalProperties: false,
        required: ['tipo', 'titulo', 'status', 'detalhe', 'instancia'],
        properties: {
          tipo: {
            type: ['string', 'null'],
            description:
              'URI identifying the problem type (`urn:portaria:problem:<code>` by default).',
          },
          titulo: { type: ['string', 'null'], description: 'Short summary, fixed per type.' },
          status: {
            type: ['integer', 'null'],
            format: 'int32',
            description: 'The HTTP status code.',
          },
          detalhe: { type: ['string', 'null'], description: 'Explanation of this occurrence.' },
          instancia: { type: ['string', 'null'], description: 'Request path and request id.' },
        },
      },
      Jwks: {
        type: 'object',
        required: ['keys'],
        properties: {
          keys: {
            type: 'array',
            items: {
              type: 'object',
              required: ['kty', 'kid', 'alg', 'use'],
              properties: {
                kty: { type: 'string' },
                kid: { type: 'string' },
                alg: { type: 'string', enum: ['ES256', 'EdDSA', 'RS256', 'PS256'] },
                use: { type: 'string', const: 'sig' },
                crv: { type: 'string' },
                x: { type: 'string' },
                y: { type: 'string' },
                n: { type: 'string' },
                e: { type: 'string' },
              },
            },
          },
        },
      },
    },
  },
} as const;

/**
 * The document a gateway serves: the token result is the shape its
 * `token.responseFields` emits, not a choice of two (a client generated from it gets
 * the right type). Everything else is `openApiDocument`.
 */
export function openApiDocumentFor(
  fields: ResponseFieldSet,
  oauth: OAuthPaths | null = OAUTH_DEFAULT_PATHS,
): typeof openApiDocument {
  const document = structuredClone(openApiDocument) as typeof openApiDocument;
  const ok = document.paths['/v1/authentication/accesstoken'].post.responses['200'];
  const name = fields === 'guide' ? 'TokenResultGuide' : 'TokenResult';
  (ok.content['application/json'] as { schema: unknown }).schema = {
    $ref: `#/components/schemas/${name}`,
  };
  // The OAuth endpoints at their configured paths, or none while the surface is off.
  const paths = document.paths as Record<string, unknown>;
  for (const setting of Object.keys(OAUTH_DEFAULT_PATHS) as (keyof OAuthPaths)[]) {
    const operation = paths[OAUTH_DEFAULT_PATHS[setting]];
    delete paths[OAUTH_DEFAULT_PATHS[setting]];
    if (oauth !== null) paths[oauth[setting]] = operation;
  }
  if (oauth === null) {
    delete paths['/.well-known/oauth-authorization-server'];
    delete paths['/.well-known/oauth-protected-resource'];
  }
  return document;
}

/** Where the OAuth endpoints are served (`oauth.*Path`). */
export type OAuthPaths = { readonly [K in keyof typeof OAUTH_DEFAULT_PATHS]: string };
