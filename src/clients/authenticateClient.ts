/**
 * Client authentication for the token operation (client id + secret). Timing must not tell
 * whether a client id exists, which secret slot matched, or whether a client is disabled, so
 * every call verifies the same number of `scrypt` and `sha256` slots (dummy hashes where a
 * client has no secret), with no early exit, and checks expiry and `disabled` only after.
 * The `reason` of a failure is private; the caller answers every failure with the same 401.
 *
 * The slots are fixed when the authenticator is built: 0 to 2 `scrypt` slots, and at least
 * 2 minus those of `sha256` (more only when a client holds two sha256 secrets and another
 * a scrypt one). A client's secrets fill the slots of their scheme, the rest hold dummy
 * hashes no secret matches; an unknown client gets dummies only. Dummy scrypt slots use
 * `SCRYPT_DEFAULTS`, so a stored scrypt hash with other parameters costs another amount of
 * work (the CLI always writes the defaults).
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from '../lib/clock.js';
import type { ClientRecord, ClientRegistry } from './clientRegistry.js';
import { checkSecret, type ParsedHash, SCRYPT_DEFAULTS } from './secretHash.js';

export type AuthenticationFailure =
  | 'unknown-client'
  | 'bad-secret'
  | 'disabled-client'
  | 'secret-expired';

export type AuthenticationResult =
  | { readonly ok: true; readonly client: ClientRecord }
  | { readonly ok: false; readonly reason: AuthenticationFailure };

export type ClientAuthenticator = (
  clientId: string,
  secret: string,
) => Promise<AuthenticationResult>;

export interface ClientAuthenticatorOptions {
  /** Replaces `checkSecret` (tests count the work done per call). */
  readonly verifySecret?: (secret: string, hash: ParsedHash) => boolean | Promise<boolean>;
}

interface Slot {
  readonly hash: ParsedHash;
  /** null for dummy slots. */
  readonly real: { readonly expiresAtMs: number | null } | null;
}

export function createClientAuthenticator(
  registry: ClientRegistry,
  clock: Clock,
  options: ClientAuthenticatorOptions = {},
): ClientAuthenticator {
  const verify = options.verifySecret ?? checkSecret;
  const clients = registry.ids().map((id) => registry.get(id) as ClientRecord);
  const scryptSlots = Math.max(0, ...clients.map((c) => count(c, 'scrypt')));
  const sha256Slots = Math.max(2 - scryptSlots, ...clients.map((c) => count(c, 'sha256')));

  // Built once: each client's secrets padded to the fixed slot layout.
  const slotsById = new Map<string, readonly Slot[]>();
  for (const client of clients) {
    slotsById.set(client.id, layout(client, scryptSlots, sha256Slots));
  }
  const unknownSlots = layout(null, scryptSlots, sha256Slots);

  return async (clientId, secret) => {
    const client = registry.get(clientId);
    const slots = (client && slotsById.get(clientId)) ?? unknownSlots;
    // Every slot is checked, started together; sha256 slots answer at once, and only
    // scrypt slots make this wait.
    const checks: (boolean | Promise<boolean>)[] = [];
    let pending = false;
    for (const slot of slots) {
      const check = verify(secret, slot.hash);
      if (typeof check !== 'boolean') pending = true;
      checks.push(check);
    }
    const matches = pending ? await Promise.all(checks) : (checks as boolean[]);
    const now = clock.now();
    let matched = false;
    let matchedExpired = false;
    for (let i = 0; i < slots.length; i++) {
      const real = (slots[i] as Slot).real;
      if (!matches[i] || real === null) continue;
      const expired = real.expiresAtMs !== null && real.expiresAtMs <= now;
      if (expired) matchedExpired = true;
      else matched = true;
    }
    if (client === undefined) return { ok: false, reason: 'unknown-client' };
    if (!matched) return { ok: false, reason: matchedExpired ? 'secret-expired' : 'bad-secret' };
    if (client.disabled) return { ok: false, reason: 'disabled-client' };
    return { ok: true, client };
  };
}

function count(client: ClientRecord, scheme: ParsedHash['scheme']): number {
  return client.secrets.filter((s) => s.hash.scheme === scheme).length;
}

function layout(client: ClientRecord | null, scryptSlots: number, sha256Slots: number): Slot[] {
  const secrets = client?.secrets ?? [];
  const slots: Slot[] = [];
  const fill = (scheme: ParsedHash['scheme'], total: number, dummy: () => ParsedHash): void => {
    const real = secrets.filter((s) => s.hash.scheme === scheme);
    for (const s of real) slots.push({ hash: s.hash, real: { expiresAtMs: s.expiresAtMs } });
    for (let i = real.length; i < total; i++) slots.push({ hash: dummy(), real: null });
  };
  fill('scrypt', scryptSlots, dummyScrypt);
  fill('sha256', sha256Slots, dummySha256);
  return slots;
}

/** A digest no secret is known to produce (random bytes, never the hash of anything). */
function dummySha256(): ParsedHash {
  return { scheme: 'sha256', digest: randomBytes(32) };
}

function dummyScrypt(): ParsedHash {
  const { N, r, p, saltBytes, keyBytes } = SCRYPT_DEFAULTS;
  return { scheme: 'scrypt', N, r, p, salt: randomBytes(saltBytes), digest: randomBytes(keyBytes) };
}
