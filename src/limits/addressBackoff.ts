/**
 * Which back-off entry of a source address a check reads and a failure charges (the local
 * limiter's rule, and the one the Redis scripts mirror). Per address and bounded: an
 * address tracks at most `MAX_CLIENTS_PER_ADDRESS` clients on their own and counts failures
 * for any other client in one overflow entry, so spraying client ids cannot grow the store;
 * a pair that recently got a token keeps its own entry.
 *
 * With an entry per (client, address) pair, every wrong secret naming a new client id
 * would leave one behind for `forgetAfterSeconds`: as many entries as the address can send
 * requests (in Redis, which has no `maxTrackedKeys`, about 1 MB per IPv6 /64). With the
 * overflow entry, which backs off every client the address has no entry for, an address
 * spraying ids is slowed as one pair would be. A known pair (a token within
 * `KNOWN_PAIR_MS`) always has its own entry and ignores the overflow: failures of other
 * clients behind the same NAT do not slow it, and filling the table does not let guesses
 * at it escape its own back-off. Dead entries count as absent, dropped when the table is
 * full.
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
