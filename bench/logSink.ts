/**
 * Bench child: the other end of the gateway's stdout, as a container runtime is.
 *
 * In production the access log goes to stdout, a pipe read by the container runtime
 * (containerd's shim), which stores it: the gateway pays for a pipe write, the runtime
 * for the storage. This child plays the runtime: it reads the named pipe the gateway
 * logs to, counts the access lines (the bench's self-check), and discards them.
 *
 *   node logSink.js <fifo>   announces { ready: true }; at the end prints
 *                            { lines: N, cpuUs: CPU time the sink used }
 */
import { open } from 'node:fs';
import { Socket } from 'node:net';
import { promisify } from 'node:util';
import { announce, onStop } from './lib/childProtocol.js';

const fifo = process.argv[2];
if (fifo === undefined) {
  process.stderr.write('usage: node logSink.js <fifo>\n');
  process.exit(2);
}
const NEEDLE = Buffer.from('"msg":"request"');
let lines = 0;
// The end of the previous chunk, when a needle may start in it and end in the next one.
let carry = Buffer.alloc(0);
// The pipe is read as a runtime reads it: from the event loop when epoll says it is
// readable, as bytes. (fs.createReadStream would read through the thread pool — a
// thread hand-off per read, ~4 µs of this process's CPU per access line — and this process
// shares the machine's two cores with the gateway.) Opening a FIFO waits for the writer:
// in the thread pool, after the ready announcement.
announce({ ready: true });
onStop(async () => ({ lines, ended: false, cpuUs: cpuUs() }));
const fd = await promisify(open)(fifo, 'r');
const input = new Socket({ fd, readable: true, writable: false });
input.on('data', (chunk) => {
  const bytes = carry.length === 0 ? (chunk as Buffer) : Buffer.concat([carry, chunk as Buffer]);
  let from = 0;
  for (let at = bytes.indexOf(NEEDLE, from); at !== -1; at = bytes.indexOf(NEEDLE, from)) {
    lines++;
    from = at + NEEDLE.length;
  }
  carry = Buffer.from(bytes.subarray(Math.max(from, bytes.length - NEEDLE.length + 1)));
});
// The gateway closed its end (it stopped): report and exit. SIGTERM before that (the
// bench failed) reports what was seen so far.
input.once('end', () => {
  announce({ lines, ended: true, cpuUs: cpuUs() });
  process.exit(0);
});
input.once('error', (error) => {
  process.stderr.write(`log sink: ${error.message}\n`);
  process.exit(1);
});

function cpuUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}
