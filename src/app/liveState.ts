/**
 * The parts of a running gateway that reloads replace and the shutdown flips. Every
 * reader goes through this one object, so a reload is seen by the next request.
 */
import {
  type ClientAuthenticator,
  createClientAuthenticator,
} from '../clients/authenticateClient.js';
import type { ClientRegistry } from '../clients/clientRegistry.js';
import type { Config } from '../config/types.js';
import type { KeyRing } from '../keys/keyRing.js';
import type { Clock } from '../lib/clock.js';
import { type MeteringPolicy, meteringPolicies } from '../pipeline/meteringPolicies.js';
import { compileRouteTable, type RouteTable } from '../proxy/routeTable.js';

export interface LiveState {
  keyRing: KeyRing;
  authenticate: ClientAuthenticator;
  /** The registry `authenticate` was built from (the OAuth endpoints read its records). */
  clients: ClientRegistry;
  clientCount: number;
  routes: RouteTable;
  /** `quotas.policies`, compiled (reloaded with the routes). */
  quotaPolicies: ReadonlyMap<string, MeteringPolicy>;
  /** Shutdown began: readiness 503, every answer closes its connection. */
  draining: boolean;
  /** The shutdown grace ended: what is still open is being cut (access lines say so). */
  graceOver: boolean;
}

/** The state as start-up loaded it: not draining. */
export function initialLiveState(
  config: Config,
  clock: Clock,
  clients: ClientRegistry,
  keyRing: KeyRing,
): LiveState {
  return {
    keyRing,
    authenticate: createClientAuthenticator(clients, clock),
    clients,
    clientCount: clients.size,
    routes: compileRouteTable(config),
    quotaPolicies: meteringPolicies(config.quotas),
    draining: false,
    graceOver: false,
  };
}
