/**
 * The tracing-cost bench, kept as its own entry so the old command still works:
 * `node dist-test/bench/tracingCost.js [options]` runs what
 * `npm run bench -- --mode tracing [options]` runs (see bench/modes/tracing.ts).
 */
import { run } from './modes/tracing.js';

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`tracingCost: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
