/**
 * The open paths: answered by the gateway itself, without a token, only at these exact
 * canonical paths (besides the OAuth endpoints and discovery documents, which have their
 * own tables).
 */
import { TOKEN_PATH } from '../domain/requestPath.js';

export const JWKS_PATH = '/.well-known/jwks.json';
export const OPENAPI_PATH = '/v1/openapi.json';

/** The open paths' route labels (an upgrade on one is refused). */
export const OPEN_ROUTES: ReadonlyMap<string, string> = new Map([
  [TOKEN_PATH, 'token'],
  [JWKS_PATH, 'jwks'],
  [OPENAPI_PATH, 'openapi'],
]);
