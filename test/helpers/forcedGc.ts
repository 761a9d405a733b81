/**
 * Forced garbage collections in the test process, for code that must not depend on an
 * object staying alive by chance (Node 20 holds `AbortSignal.timeout` weakly inside
 * `AbortSignal.any`: collected, it never fires). `gc` is exposed at run time, so the test
 * runner needs no flag.
 */
import type { TestContext } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | undefined;

/**
 * Runs a full collection every `everyMs` until the test ends (a collection takes tens of
 * milliseconds on a busy machine: more often would leave the test little else).
 */
export function forceGcEvery(t: TestContext, everyMs = 100): void {
  if (gc === undefined) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  const collect = gc;
  collect();
  const timer = setInterval(collect, everyMs);
  t.after(() => clearInterval(timer));
}
