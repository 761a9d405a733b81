/**
 * The clients file and the keys directory as the configured profile has them: what start,
 * a reload and `portaria config check` load, so every consumer sees the effective values
 * and a reload that contradicts the profile is refused like a broken file.
 */
import { type ClientRegistry, loadClientRegistry } from '../clients/clientRegistry.js';
import { ConfigError } from '../config/configError.js';
import type { Config } from '../config/types.js';
import type { KeyRing } from '../keys/keyRing.js';
import { loadKeyRing } from '../keys/loadKeyRing.js';
import type { Clock } from '../lib/clock.js';
import { clientsUnderProfile } from './fapiClients.js';
import { keyRingUnderProfile } from './fapiKeys.js';

/**
 * The clients file under the profile; a client naming a quota policy that `policies`
 * (default: the configuration's) does not have is refused like any broken entry.
 */
export async function loadProfiledClients(
  config: Pick<Config, 'clients' | 'profile' | 'quotas'>,
  policies: ReadonlySet<string> = new Set(Object.keys(config.quotas.policies)),
): Promise<ClientRegistry> {
  const file = config.clients.file;
  const registry = await loadClientRegistry(file);
  const unknown = registry
    .ids()
    .filter((id) => {
      const quota = registry.get(id)?.quota ?? null;
      return quota !== null && !policies.has(quota);
    })
    .map((id) => `client ${id}: quota "${registry.get(id)?.quota}" is not in quotas.policies`);
  if (unknown.length > 0) throw new ConfigError(unknown, `clients.file (${file})`);
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
