/**
 * The clients file and the keys directory as the configured profile has them: what start,
 * a reload and `portaria config check` load, so every consumer sees the effective values
 * and a reload that contradicts the profile is refused like a broken file.
 */
import { type ClientRegistry, loadClientRegistry } from '../clients/clientRegistry.js';
import type { Config } from '../config/types.js';
import type { KeyRing } from '../keys/keyRing.js';
import { loadKeyRing } from '../keys/loadKeyRing.js';
import type { Clock } from '../lib/clock.js';
import { clientsUnderProfile } from './fapiClients.js';
import { keyRingUnderProfile } from './fapiKeys.js';

export async function loadProfiledClients(
  config: Pick<Config, 'clients' | 'profile'>,
): Promise<ClientRegistry> {
  const file = config.clients.file;
  const registry = await loadClientRegistry(file);
  return clientsUnderProfile(registry, config.profile, `clients.file (${file})`);
}

export async function loadProfiledKeyRing(
  config: Pick<Config, 'keys' | 'token' | 'profile'>,
  clock?: Clock,
): Promise<KeyRing> {
  const dir = config.keys.dir;
  const ring = await loadKeyRing(dir, config.token.algorithm, clock);
  return keyRingUnderProfile(ring, config.profile, `keys.dir (${dir})`);
}
