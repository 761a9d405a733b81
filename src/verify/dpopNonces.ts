/**
 * Server-provided DPoP nonces (RFC 9449 §8, §9): a nonce is the HMAC of the current time
 * slot under a secret, so it needs no storage and every worker and replica holding the
 * secret issues and accepts the same ones (`dpop.nonces.secretFile`; without it, a random
 * secret per process group, handed by the primary to its workers).
 *
 * A slot lasts `lifetimeSeconds`; the nonces of the slot before, this one and the next are
 * accepted — a nonce stays good for one to two lifetimes, and a replica whose clock is a
 * little ahead is not refused. A nonce says nothing but its slot, and cannot be made
 * without the secret. The current one is computed once per slot.
 */

import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/configError.js';
import type { DpopConfig } from '../config/types.js';
import { type Clock, epochSeconds } from '../lib/clock.js';
import { GROUP_NONCE_SECRET_ENV, takeGroupSecret } from '../lib/groupSecret.js';

/** The least secret a nonce file may hold: 32 bytes of key (RFC 2104 §3: at least L). */
const MIN_SECRET_BYTES = 32;

export class DpopNonces {
  readonly #secret: Buffer;
  readonly #lifetimeSeconds: number;
  readonly #clock: Clock;
  #slot = Number.NaN;
  #current = '';

  constructor(secret: Buffer, lifetimeSeconds: number, clock: Clock) {
    this.#secret = secret;
    this.#lifetimeSeconds = lifetimeSeconds;
    this.#clock = clock;
  }

  /** The nonce to hand out now (`DPoP-Nonce`). */
  current(): string {
    const slot = this.#slotNow();
    if (slot !== this.#slot) {
      this.#slot = slot;
      this.#current = this.#nonceOf(slot);
    }
    return this.#current;
  }

  /** Whether `nonce` is one of this slot's, the previous one's or the next one's. */
  accepts(nonce: string): boolean {
    if (nonce.length !== 22) return false;
    const slot = this.#slotNow();
    return (
      nonce === this.current() ||
      nonce === this.#nonceOf(slot - 1) ||
      nonce === this.#nonceOf(slot + 1)
    );
  }

  #slotNow(): number {
    return Math.floor(epochSeconds(this.#clock) / this.#lifetimeSeconds);
  }

  /** 128 bits of HMAC-SHA256 over the slot (RFC 2104 §5 truncation), base64url. */
  #nonceOf(slot: number): string {
    return createHmac('sha256', this.#secret)
      .update(`portaria dpop nonce ${slot}`)
      .digest()
      .subarray(0, 16)
      .toString('base64url');
  }
}

/**
 * The nonces `dpop.nonces` asks for, or null when they are off. The secret: the file's
 * content, else the one a primary gave this worker, else a new random one.
 */
export function dpopNoncesOf(config: DpopConfig, clock: Clock): DpopNonces | null {
  const nonces = config.nonces;
  if (!config.enabled || !nonces.enabled) return null;
  return new DpopNonces(nonceSecret(nonces.secretFile), nonces.lifetimeSeconds, clock);
}

function nonceSecret(file: string | null): Buffer {
  if (file !== null) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8').trim();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      throw new ConfigError([`dpop.nonces.secretFile: cannot read ${file} (${code})`]);
    }
    if (Buffer.byteLength(text) < MIN_SECRET_BYTES) {
      throw new ConfigError([
        `dpop.nonces.secretFile: ${file} must hold at least ${MIN_SECRET_BYTES} bytes (e.g. openssl rand -base64 48)`,
      ]);
    }
    return Buffer.from(text, 'utf8');
  }
  return takeGroupSecret(GROUP_NONCE_SECRET_ENV) ?? randomBytes(MIN_SECRET_BYTES);
}
