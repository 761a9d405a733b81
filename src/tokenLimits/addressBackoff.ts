/**
 * Which back-off entry of a source address a check reads and a failure charges (the local
 * limiter's rule, and the one the Redis scripts mirror). The entries of one address are
 * a small table: client entry key (`backoffEntryKey`) → `BackoffState`, plus one
 * overflow entry.
 *
 * Why per address and bounded: with an entry per (client, address) pair, every wrong
 * secret naming a new client id leaves an entry behind for `forgetAfterSeconds`, so one
 * address makes the store hold as many entries as it can send requests (with Redis, which
 * has no `maxTrackedKeys`: about 1 MB per IPv6 /64, 72 GB per /48). So an address tracks at
 * most `MAX_CLIENTS_PER_ADDRESS` clients on their own; failures for any further client
 * are counted together in the address's overflow entry, which then backs off every client
 * the address has no entry for. An address spraying client ids is thus slowed as one
 * (client, address) pair would be, and never holds more than the cap, the overflow entry,
 * and one entry per client it got a token for lately.
 *
 * Known pairs (a (client, address) pair that got a token within `KNOWN_PAIR_MS`) always
 * have their own entry and ignore the overflow: failures of other clients sent from the
 * same address (a shared NAT) do not slow a client that proved its secret there, and
 * filling the table first does not let anyone's guesses at a known pair escape its own
 * back-off. Entries no longer live (`forgetAtMs` reached) count as absent; they are
 * dropped when the table is full.
 */
import { type BackoffRule, type BackoffState, forgetAtMs } from './failedSecretBackoff.js';

/** Clients an address tracks on their own before the rest share its overflow entry. */
export const MAX_CLIENTS_PER_ADDRESS = 16;

/**
 * The overflow entry's name: never a client's entry key (`backoffEntryKey`: 1–44 visible
 * ASCII characters, or a space and 43 base64url characters).
 */
export const OVERFLOW = ' *';

/** The back-off entries of one address: client key (or `OVERFLOW`) → state. */
export type AddressEntries = Map<string, BackoffState>;

function live(state: BackoffState | undefined, rule: BackoffRule, nowMs: number): boolean {
  return state !== undefined && nowMs < forgetAtMs(state, rule);
}

/** The entry a check of `client` from this address reads (undefined: nothing to wait for). */
export function entryToCheck(
  entries: AddressEntries | undefined,
  client: string,
  known: boolean,
  rule: BackoffRule,
  nowMs: number,
): BackoffState | undefined {
  if (entries === undefined) return undefined;
  const own = entries.get(client);
  if (live(own, rule, nowMs)) return own;
  if (known) return undefined;
  const overflow = entries.get(OVERFLOW);
  return live(overflow, rule, nowMs) ? overflow : undefined;
}

/**
 * The name of the entry a failure of `client` charges: its own when it has a live one,
 * is known, or the address tracks fewer than `MAX_CLIENTS_PER_ADDRESS` live clients;
 * else `OVERFLOW`. When the table is full its dead entries are dropped first (in place).
 */
export function entryToCharge(
  entries: AddressEntries,
  client: string,
  known: boolean,
  rule: BackoffRule,
  nowMs: number,
): string {
  if (known || live(entries.get(client), rule, nowMs)) return client;
  if (entries.size < MAX_CLIENTS_PER_ADDRESS) return client;
  let clients = 0;
  for (const [name, state] of entries) {
    if (!live(state, rule, nowMs)) entries.delete(name);
    else if (name !== OVERFLOW) clients++;
  }
  return clients < MAX_CLIENTS_PER_ADDRESS ? client : OVERFLOW;
}
