/**
 * Closing a connection in stages ("lingering close", RFC 9112 §9.6).
 *
 * A server that closes a connection while the client is still sending leaves unread
 * bytes in its receive buffer, or gets more after the close: the kernel then answers
 * with a TCP reset, and a reset makes the client's stack drop what it had not read yet —
 * the answer explaining the refusal (`write EPIPE` instead of a 413). So: send the answer,
 * half-close (FIN), keep reading and dropping what still arrives until the client closes
 * its side, then close. Bounded, so a client that never stops sending cannot hold the
 * connection: after `maxMs`, or once `maxBytes` were dropped, it is closed as it is.
 *
 * The caller is done with the connection: whatever read it before (Node's HTTP parser)
 * is detached, so no byte that arrives now is ever read as a request.
 */
import type { Duplex } from 'node:stream';

/** Longest wait for the client to stop sending, in all (nginx waits 5 s per read, 30 s in all). */
export const LINGER_MAX_MS = 5000;
/** Most bytes read and dropped before the connection is closed regardless. */
export const LINGER_MAX_BYTES = 4 * 1024 * 1024;

export interface LingerBounds {
  readonly maxMs: number;
  readonly maxBytes: number;
}

const BOUNDS: LingerBounds = { maxMs: LINGER_MAX_MS, maxBytes: LINGER_MAX_BYTES };

const lingering = new WeakSet<Duplex>();

/** True while `socket` is being closed in stages: nothing more is to be written on it. */
export function isLingering(socket: Duplex): boolean {
  return lingering.has(socket);
}

/** Half-closes `socket` (after what was written) and closes it once the client is done. */
export function lingeringClose(socket: Duplex, bounds: LingerBounds = BOUNDS): void {
  if (socket.destroyed) return;
  const close = (): void => {
    socket.destroy();
  };
  if (socket.readableEnded) {
    // The client closed its side already: nothing more can arrive.
    closeOnceWritten(socket);
    return;
  }
  lingering.add(socket);
  let dropped = 0;
  const timer = setTimeout(close, bounds.maxMs);
  socket.once('close', () => clearTimeout(timer));
  socket.removeAllListeners('data');
  socket.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > bounds.maxBytes) close();
  });
  socket.once('end', () => closeOnceWritten(socket));
  socket.resume();
  readAgain(socket);
  if (socket.writable) socket.end();
}

type Handle = { reading?: boolean; readStart?: () => number };

/**
 * Node's HTTP parser reads the socket's handle itself; a body nobody read made it stop
 * the handle (backpressure), and the stream, which never saw those reads, does not
 * start it again on resume() (Node 20). So it is started here, as net.Socket does.
 */
function readAgain(socket: Duplex): void {
  const handle = (socket as Duplex & { _handle?: Handle | null })._handle;
  if (handle == null || handle.reading !== false || typeof handle.readStart !== 'function') return;
  handle.reading = true;
  handle.readStart();
}

/** Closes `socket` once its written bytes are handed to the kernel. */
function closeOnceWritten(socket: Duplex): void {
  if (socket.writable) socket.end();
  if (socket.writableFinished) socket.destroy();
  else socket.once('finish', () => socket.destroy());
}
