/**
 * A secret every process of a group (`server.workers` > 1) must share and that comes from
 * no file: the primary makes it and hands it to each worker in its environment, under a
 * name outside the `PORTARIA_` settings namespace; a worker reads it once and removes it,
 * and a process that is not a worker ignores it (it cannot be set from outside).
 */
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';

/** The DPoP nonce secret (`verify/dpopNonces.ts`). */
export const GROUP_NONCE_SECRET_ENV = '_PORTARIA_GROUP_DPOP_NONCE_SECRET';

/** 32 random bytes, base64url: what a primary puts in its workers' environment. */
export function newGroupSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** In a worker: the secret its primary gave under `name`, once; else undefined. */
export function takeGroupSecret(name: string): Buffer | undefined {
  const given = process.env[name];
  if (given === undefined || !cluster.isWorker) return undefined;
  delete process.env[name];
  return Buffer.from(given, 'base64url');
}
