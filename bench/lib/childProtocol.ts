/**
 * The child side of the bench's process protocol: a child announces itself with one JSON
 * line on stdout (its URL, and for the gateway a token), and on SIGTERM/SIGINT runs its
 * stop handler, may print one more JSON line (final statistics), and exits 0 — exiting
 * through `process.exit` so `--cpu-prof` gets to write its profile.
 *
 * Children stay runnable by hand: `node dist-test/bench/upstream.js` prints its URL and
 * serves until Ctrl-C.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export function announce(value: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

export function onStop(stop: () => Promise<Record<string, unknown> | undefined>): void {
  let stopping = false;
  const handler = () => {
    if (stopping) return;
    stopping = true;
    stop().then(
      (final) => {
        if (final !== undefined) announce(final);
        process.exit(0);
      },
      (error: unknown) => {
        process.stderr.write(`bench child: stop failed: ${(error as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', handler);
  process.once('SIGINT', handler);
}

/** Listens on 127.0.0.1:0 and resolves with the server's `http://127.0.0.1:<port>`. */
export function listenLoopback(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
  });
}

/** Closes a server and every connection it still holds. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** The one positional argument a passthrough child needs: the upstream origin. */
export function upstreamArgument(): string {
  const upstream = process.argv[2];
  if (upstream === undefined || !/^http:\/\/127\.0\.0\.1:\d+$/.test(upstream)) {
    process.stderr.write('usage: node <child>.js http://127.0.0.1:<port>\n');
    process.exit(2);
  }
  return upstream;
}
