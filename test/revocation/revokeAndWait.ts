/**
 * Child process for the SIGKILL durability test: opens the store given on the command
 * line, revokes one token, prints 'acked' once the promise has resolved, then idles
 * until the parent kills it.
 */
import { ManualClock } from '../../src/lib/clock.js';
import { LocalRevocationStore } from '../../src/revocation/localRevocationStore.js';

const [file, tokenId, expiresAt] = process.argv.slice(2);
if (file === undefined || tokenId === undefined || expiresAt === undefined) {
  throw new Error('usage: revokeAndWait <file> <tokenId> <expiresAt>');
}
const store = await LocalRevocationStore.open(file, new ManualClock());
await store.revokeToken(tokenId, Number(expiresAt));
process.stdout.write('acked\n');
setInterval(() => {}, 60_000);
