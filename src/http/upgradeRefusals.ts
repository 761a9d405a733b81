/**
 * Upgrades the gateway refuses before any token is looked at: on an open path (it serves
 * no WebSocket) and while draining (a tunnel opened then would hold the stop for the
 * whole grace).
 */
import type { IncomingMessage } from 'node:http';
import { OPEN_ROUTES } from '../documents/openPaths.js';
import { TOKEN_PATH } from '../domain/requestPath.js';
import { PortariaError } from '../errors.js';
import type { OAuthRoute } from './oauthRoutes.js';
import type { RequestScope } from './requestScope.js';

/**
 * An upgrade on an open path: 400 when the method is one the path takes (only the
 * upgrade is wrong, and a 405 naming that very method would contradict itself); another
 * method gets a 405 naming what the path does accept (RFC 9110 §15.5.6).
 */
export function refuseUpgradeOnOpenPath(
  req: IncomingMessage,
  path: string,
  scope: RequestScope,
  oauth: OAuthRoute | undefined,
): void {
  const openRoute = oauth?.routeId ?? OPEN_ROUTES.get(path);
  if (openRoute === undefined) return;
  refuseUpgradeOn(
    req,
    openRoute,
    oauth?.allow ?? (path === TOKEN_PATH ? 'POST' : 'GET, HEAD'),
    scope,
  );
}

export function refuseUpgradeOn(
  req: IncomingMessage,
  openRoute: string,
  allow: string,
  scope: RequestScope,
): never {
  scope.routeId = openRoute;
  if (allow.split(', ').includes(req.method ?? '')) {
    throw new PortariaError(
      'invalid-request',
      'This path does not accept upgrades; send the request without Upgrade.',
      { reason: 'upgrade-on-open-path' },
    );
  }
  throw new PortariaError('method-not-allowed', 'This path does not accept upgrades.', {
    reason: 'upgrade-on-open-path',
    headers: { allow },
  });
}

export function shuttingDown(): PortariaError {
  return new PortariaError('service-unavailable', 'The gateway is shutting down.', {
    reason: 'shutting-down',
  });
}
