/**
 * The OAuth 2.0 endpoints the public listener answers itself, by their configured paths
 * (`oauth.*Path`): built once at start, looked up per request by exact canonical path.
 * None when `oauth.enabled` is false. Each endpoint has a route label for the access
 * line and request metrics (`oauth-token`, …) and the methods it accepts.
 */
import type { IncomingMessage } from 'node:http';
import type { OAuthConfig } from '../config/types.js';
import {
  type IntrospectionEndpointDeps,
  runIntrospectionRequest,
} from '../oauth/introspectionEndpoint.js';
import { type RevocationEndpointDeps, runRevocationRequest } from '../oauth/revocationEndpoint.js';
import { handleOAuthFormRequest, type OAuthFormRouteDeps } from './oauthFormRoute.js';
import { handleOAuthTokenRequest, type OAuthTokenRouteDeps } from './oauthTokenRoute.js';
import type { GatewayResponse } from './requestScope.js';

export interface OAuthRoute {
  /** The access line's and request metrics' `route`. */
  readonly routeId: string;
  /** The `Allow` of a 405 (an upgrade on the path). */
  readonly allow: string;
  handle(req: IncomingMessage, res: GatewayResponse): Promise<void>;
}

export interface OAuthRoutesDeps {
  readonly token: OAuthTokenRouteDeps;
  readonly revocation: RevocationEndpointDeps & OAuthFormRouteDeps;
  readonly introspection: IntrospectionEndpointDeps & OAuthFormRouteDeps;
}

export class OAuthRoutes {
  readonly #byPath: ReadonlyMap<string, OAuthRoute>;

  constructor(config: OAuthConfig, deps: OAuthRoutesDeps) {
    const routes = new Map<string, OAuthRoute>();
    if (config.enabled) {
      routes.set(config.tokenPath, {
        routeId: 'oauth-token',
        allow: 'POST',
        handle: (req, res) => handleOAuthTokenRequest(req, res, deps.token),
      });
      const { revocation, introspection } = deps;
      routes.set(config.revocationPath, {
        routeId: 'oauth-revoke',
        allow: 'POST',
        handle: (req, res) =>
          handleOAuthFormRequest(
            req,
            res,
            (call) => runRevocationRequest(call, revocation),
            revocation,
          ),
      });
      routes.set(config.introspectionPath, {
        routeId: 'oauth-introspect',
        allow: 'POST',
        handle: (req, res) =>
          handleOAuthFormRequest(
            req,
            res,
            (call) => runIntrospectionRequest(call, introspection),
            introspection,
          ),
      });
    }
    this.#byPath = routes;
  }

  get(path: string): OAuthRoute | undefined {
    return this.#byPath.get(path);
  }
}
