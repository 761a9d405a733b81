/**
 * The content fingerprints reloads compare against, taken BEFORE the first loads: a
 * change made while the gateway starts (it may wait seconds for Redis between loading a
 * file and watching it) is then reloaded, not missed.
 */
import type { Config } from '../config/types.js';
import { isKeyDirectoryEntry } from '../keys/loadKeyRing.js';
import {
  type ContentFingerprint,
  contentFingerprint,
  type EntryFilter,
} from '../reload/contentFingerprint.js';
import { tlsFilePaths, tlsSettingsOf } from '../tls/tlsMaterial.js';
import type { ReloadDeps } from './reloads.js';

/** The fingerprint of one reloadable source, taken now. */
export function sourceBaseline(
  paths: readonly string[],
  entries?: EntryFilter,
): Promise<ContentFingerprint> {
  const print = contentFingerprint(paths, entries);
  // Handled here too: a start that fails before the watch is set up must not leave an
  // unhandled rejection behind.
  print.catch(() => undefined);
  return print;
}

/** The clients file's, the keys directory's, each issuer key file's and the TLS files' baselines. */
export async function takeReloadBaselines(config: Config): Promise<ReloadDeps['since']> {
  const tls = config.server.tls.enabled
    ? sourceBaseline(tlsFilePaths(tlsSettingsOf(config)))
    : undefined;
  const since = {
    clients: sourceBaseline([config.clients.file]),
    keys: sourceBaseline([config.keys.dir], isKeyDirectoryEntry),
    issuerFiles: new Map(
      config.issuers.flatMap((issuer) =>
        issuer.keyFile ? [[issuer.id, sourceBaseline([issuer.keyFile])] as const] : [],
      ),
    ),
    ...(tls === undefined ? {} : { tls }),
  };
  // Settled before the loads read: a change landing between the two must not become the
  // baseline (then it would never be reloaded). A failed fingerprint reloads at once.
  await Promise.allSettled([
    since.clients,
    since.keys,
    ...since.issuerFiles.values(),
    ...(tls === undefined ? [] : [tls]),
  ]);
  return since;
}
