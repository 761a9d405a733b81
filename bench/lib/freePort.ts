/** A loopback port free at the time of asking, for servers that cannot report port 0 back. */
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once `url` answers any HTTP status, or rejects after `timeoutMs`. */
export async function waitForHttp(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`${url} did not answer: ${(error as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
