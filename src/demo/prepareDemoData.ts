/**
 * Demo mode only: creates the signing key and the demo client in `.portaria-demo/` when
 * they are missing, and returns the demo secret when it was just created (it is shown
 * once, like any generated secret). A production config never reaches this code: there,
 * a missing key or clients file is a start-up error naming the setting.
 */
import { access, readdir } from 'node:fs/promises';
import { addClient } from '../clients/clientsFile.js';
import { generateSecret, hashGeneratedSecret } from '../clients/secretHash.js';
import type { SigningAlgorithm } from '../config/types.js';
import { generateSigningKey, writeSigningKey } from '../keys/generateKey.js';

export const DEMO_CLIENT_ID = 'demo';
export const DEMO_SCOPES = ['orders:read', 'orders:write'];

export async function prepareDemoData(options: {
  keysDir: string;
  clientsFile: string;
  algorithm: SigningAlgorithm;
  /**
   * Called just before the demo client is written (synchronously, so a stop signal
   * cannot fall between this call and the file's creation unseen by the caller).
   */
  creatingClient?: () => void;
}): Promise<{ createdSecret: string | null }> {
  const keyFiles = await readdir(options.keysDir).catch(() => [] as string[]);
  if (!keyFiles.some((f) => f.endsWith('.pem') || f.endsWith('.jwk.json'))) {
    await writeSigningKey(options.keysDir, await generateSigningKey(options.algorithm, new Date()));
  }
  const exists = await access(options.clientsFile).then(
    () => true,
    () => false,
  );
  if (exists) return { createdSecret: null };
  const secret = generateSecret();
  options.creatingClient?.();
  await addClient(options.clientsFile, {
    id: DEMO_CLIENT_ID,
    secrets: [{ hash: hashGeneratedSecret(secret) }],
    scopes: DEMO_SCOPES,
  });
  return { createdSecret: secret };
}
