import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import { isLingering, type LingerBounds, lingeringClose } from '../../src/lib/lingeringClose.js';

interface Closing {
  readonly port: number;
  /** Bytes the server's own reader saw (it must see none after the close began). */
  readonly seenByReader: () => number;
  /** The server side's socket, once a client connected. */
  readonly socket: () => Socket | undefined;
}

/** A server that answers `ANSWER` to the first bytes, then closes with `bounds`. */
async function closingServer(t: TestContext, bounds: LingerBounds): Promise<Closing> {
  let seen = 0;
  let accepted: Socket | undefined;
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    accepted = socket;
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.length;
      if (isLingering(socket)) return;
      socket.write('ANSWER');
      lingeringClose(socket, bounds);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    accepted?.destroy();
    return new Promise<void>((done) => server.close(() => done()));
  });
  return {
    port: (server.address() as { port: number }).port,
    seenByReader: () => seen,
    socket: () => accepted,
  };
}

interface ClientEnd {
  readonly read: string;
  readonly error: string | undefined;
  /** Milliseconds from the answer to the close. */
  readonly closedAfterMs: number;
}

/** Connects (half-open), sends `first`, then `send(socket)` drives the rest; resolves on close. */
function client(
  port: number,
  first: string,
  send: (socket: Socket) => void,
): { socket: Socket; ended: Promise<ClientEnd> } {
  const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
  let read = '';
  let error: string | undefined;
  let answeredAt = 0;
  const ended = new Promise<ClientEnd>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      answeredAt ||= performance.now();
      read += chunk.toString('latin1');
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error ??= e.code;
    });
    socket.on('close', () =>
      resolve({ read, error, closedAfterMs: performance.now() - answeredAt }),
    );
  });
  socket.write(first, () => send(socket));
  return { socket, ended };
}

describe('lingeringClose', () => {
  test('a client that closes its side after the answer: closed at once, answer read, no reset', async (t) => {
    const server = await closingServer(t, { maxMs: 10_000, maxBytes: 1 << 20 });
    const { ended } = client(server.port, 'request', (socket) => {
      socket.once('end', () => socket.end());
    });
    const { read, error, closedAfterMs } = await ended;
    assert.equal(read, 'ANSWER');
    assert.equal(error, undefined);
    assert.ok(closedAfterMs < 5000, `closed after ${closedAfterMs} ms`);
  });

  test('what arrives after the answer is dropped, never handed to the reader before it', async (t) => {
    const server = await closingServer(t, { maxMs: 10_000, maxBytes: 1 << 20 });
    const { ended } = client(server.port, 'request', (socket) => {
      socket.once('end', () => socket.end(Buffer.alloc(100_000, 'x')));
    });
    const { read, error } = await ended;
    assert.equal(read, 'ANSWER');
    assert.equal(error, undefined);
    assert.equal(server.seenByReader(), 'request'.length);
  });

  test('a client that keeps sending slowly is cut off at maxMs', async (t) => {
    const maxMs = 400;
    const server = await closingServer(t, { maxMs, maxBytes: 1 << 20 });
    let drip: NodeJS.Timeout | undefined;
    const { ended } = client(server.port, 'request', (socket) => {
      drip = setInterval(() => socket.write('.'), 20);
    });
    t.after(() => clearInterval(drip));
    const { read, closedAfterMs } = await ended;
    clearInterval(drip);
    assert.equal(read, 'ANSWER');
    assert.ok(closedAfterMs >= maxMs - 50, `closed after ${closedAfterMs} ms`);
    assert.ok(closedAfterMs < maxMs + 2000, `closed after ${closedAfterMs} ms`);
  });

  test('a client that sends more than maxBytes is cut off before maxMs', async (t) => {
    const server = await closingServer(t, { maxMs: 20_000, maxBytes: 256 * 1024 });
    const piece = Buffer.alloc(64 * 1024, 'x');
    const { ended } = client(server.port, 'request', (socket) => {
      const more = (): void => {
        while (!socket.destroyed && socket.write(piece));
      };
      socket.on('drain', more);
      more();
    });
    const { read, closedAfterMs } = await ended;
    assert.equal(read, 'ANSWER');
    assert.ok(closedAfterMs < 10_000, `closed after ${closedAfterMs} ms`);
  });

  test('a socket whose client already closed its side is closed once the answer is out', async (t) => {
    const server = await closingServer(t, { maxMs: 10_000, maxBytes: 1 << 20 });
    const { ended } = client(server.port, 'request', (socket) => socket.end());
    const { read, error, closedAfterMs } = await ended;
    assert.equal(read, 'ANSWER');
    assert.equal(error, undefined);
    assert.ok(closedAfterMs < 5000, `closed after ${closedAfterMs} ms`);
    assert.equal(server.socket()?.destroyed, true);
  });
});
