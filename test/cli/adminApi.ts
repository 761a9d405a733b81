/** A real admin listener (node:http + createAdminHandler) for the CLI's revoke command to call. */
import { createServer } from 'node:http';
import type { TestContext } from 'node:test';
import { createAdminHandler } from '../../src/admin/adminRoutes.js';
import type { RevocationStore } from '../../src/revocation/revocationStore.js';

export const ADMIN_LIFETIME = 3600;
export const ADMIN_SKEW = 30;

/** Listens on a loopback port until the test ends; returns the port. */
export async function startAdminApi(
  t: TestContext,
  store: RevocationStore,
  adminToken: string,
): Promise<number> {
  const server = createServer(
    createAdminHandler({
      metricsText: async () => ({ contentType: 'text/plain', text: '' }),
      ready: () => ({ ready: true }),
      problemTypeBase: 'urn:portaria:problem:',
      maxHeaderLines: 100,
      revocations: {
        store,
        adminToken,
        maxLifetimeSeconds: ADMIN_LIFETIME,
        clockSkewSeconds: ADMIN_SKEW,
        now: () => Date.now(),
      },
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as { port: number }).port;
}
