/**
 * Bench child: the other end of the gateway's stdout, as a container runtime is.
 *
 * In production the access log goes to stdout, a pipe read by the container runtime
 * (containerd's shim), which stores it: the gateway pays for a pipe write, the runtime
 * for the storage. This child plays the runtime: it reads the named pipe the gateway
 * logs to, counts the access lines (the bench's self-check), and discards them.
 *
 *   node logSink.js <fifo>   announces { ready: true }; on SIGTERM prints { lines: N }
 */
import { createReadStream } from 'node:fs';
import { announce, onStop } from './lib/childProtocol.js';

const fifo = process.argv[2];
if (fifo === undefined) {
  process.stderr.write('usage: node logSink.js <fifo>\n');
  process.exit(2);
}
const NEEDLE = '"msg":"request"';
let lines = 0;
let carry = '';
const input = createReadStream(fifo, { encoding: 'utf8', highWaterMark: 64 * 1024 });
input.on('data', (chunk) => {
  const text = carry + String(chunk);
  let from = 0;
  for (let at = text.indexOf(NEEDLE, from); at !== -1; at = text.indexOf(NEEDLE, from)) {
    lines++;
    from = at + NEEDLE.length;
  }
  // Keep a tail that could hold the start of a needle split across chunks.
  carry = text.slice(Math.max(from, text.length - NEEDLE.length + 1));
});
// The gateway closed its end (it stopped): report and exit. SIGTERM before that (the
// bench failed) reports what was seen so far.
input.once('end', () => {
  announce({ lines, ended: true });
  process.exit(0);
});
input.once('error', (error) => {
  process.stderr.write(`log sink: ${error.message}\n`);
  process.exit(1);
});
announce({ ready: true });
onStop(async () => ({ lines, ended: false }));
