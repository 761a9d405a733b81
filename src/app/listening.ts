/**
 * Listening: the public listener first, then the admin one (a worker of a group has none:
 * its primary's serves the group), closing the first when the second cannot bind. Then
 * one line says where, and settings rarely meant outside tests are warned about (and,
 * with TLS, a server certificate out of its validity or an http: issuer).
 */
import type { Server } from 'node:http';
import type { Config } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../observability/logger.js';
import type { ServerTls } from '../tls/serverTls.js';
import { validityProblem } from '../tls/tlsMaterial.js';
import type { LiveState } from './liveState.js';
import { listenOn, urlOf } from './servers.js';

export interface ListeningDeps {
  readonly publicServer: Server;
  readonly adminServer: Server | null;
  readonly state: Pick<LiveState, 'keyRing' | 'clientCount'>;
  readonly logger: Logger;
  /** A worker of a group: the revocation store is its primary's, which warns of it. */
  readonly worker: boolean;
  /** The public listener's TLS; null: plain HTTP. */
  readonly tls: ServerTls | null;
  readonly clock: Clock;
}

export async function listenBoth(
  config: Config,
  deps: ListeningDeps,
): Promise<{ publicUrl: string; adminUrl: string }> {
  const { publicServer, adminServer, state, logger } = deps;
  await listenOn(publicServer, config.server.host, config.server.port, 'server');
  try {
    if (adminServer !== null) {
      await listenOn(adminServer, config.admin.host, config.admin.port, 'admin');
    }
  } catch (error) {
    publicServer.close();
    throw error;
  }
  const publicUrl = urlOf(publicServer);
  const adminUrl = adminServer === null ? '' : urlOf(adminServer);
  logger.info(
    { publicUrl, adminUrl, kid: state.keyRing.signingKey.kid, clients: state.clientCount },
    'listening',
  );
  if (config.routes.length === 0 && config.upstream.default === null) {
    logger.warn(
      { setting: 'routes' },
      'no routes and no upstream.default: every request but the token operation gets 404 (add routes to the configuration)',
    );
  }
  if (config.revocation.store === 'memory' && !deps.worker) {
    logger.warn(
      { setting: 'revocation.store' },
      'revocations are kept in memory only: a restart forgets them and other replicas never see them (use local or redis outside tests)',
    );
  }
  if (deps.tls !== null) {
    const problem = validityProblem(deps.tls.material, deps.clock.now());
    if (problem !== null) logger.warn({ setting: 'server.tls.certFile' }, problem);
    if (config.issuer.startsWith('http:')) {
      logger.warn(
        { setting: 'issuer' },
        'the listener speaks TLS but issuer is an http: URL: the discovery documents and challenges name http: endpoints (set issuer to the https: URL partners use)',
      );
    }
  }
  return { publicUrl, adminUrl };
}
