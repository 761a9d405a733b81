/**
 * `npm run bench [-- --mode <name>] [options]`: the bench's modes, each its own module in
 * `bench/modes/`, each reporting ratios against a baseline measured in the same run
 * (interleaved rounds, medians, CPU µs per request from /proc). Every child process runs
 * on the Node that runs this (`process.execPath`). What each mode measures and its
 * options: docs/performance.md and the header of its module.
 *
 *   forwarding (default)  gateway (cached token, log + metrics on) vs bare undici passthrough
 *   verify                cache defeated: gateway vs HAProxy jwt_verify vs undici + jose
 *   token                 the token operation vs a bare sha256 + ES256-sign server
 *   memory                RSS with 100,000 distinct tokens in the verified-token cache
 *   soak                  RSS over time at half the maximum load
 *   routes                req/s at 1 … 10,000 routes
 *   revocations           req/s at 0 … 1,000,000 revocation entries
 *   workers               server.workers 2 vs 1
 *   tracing               tracing off / on at 1 % vs no tracing section, three gateways on one CPU
 *   tls                   server.tls on vs off, two gateways on one CPU; new connections, resumption
 *   bound                 a certificate-bound route vs a bearer route over the same mutual-TLS connections
 *   dpop                  a DPoP route (a fresh proof per request) vs a bearer route; replay store local vs Redis
 *   authorizer            nginx auth_request → Portaria (decision cache off / on) vs proxy mode vs HAProxy
 *   decisions             the authorizer asked directly: gRPC (Envoy ext_authz Check) vs the HTTP entry
 *   quotas                a metered route vs an unmetered one; quota store local vs Redis
 */
import { splitMode } from './lib/modeArgs.js';

type Mode = { run(argv: readonly string[]): Promise<number> };

const MODES: Readonly<Record<string, () => Promise<Mode>>> = {
  forwarding: () => import('./modes/forwarding.js'),
  verify: () => import('./modes/verify.js'),
  token: () => import('./modes/token.js'),
  memory: () => import('./modes/memory.js'),
  soak: () => import('./modes/soak.js'),
  routes: () => import('./modes/routes.js'),
  revocations: () => import('./modes/revocations.js'),
  workers: () => import('./modes/workers.js'),
  tracing: () => import('./modes/tracing.js'),
  tls: () => import('./modes/tls.js'),
  bound: () => import('./modes/bound.js'),
  dpop: () => import('./modes/dpop.js'),
  authorizer: () => import('./modes/authorizer.js'),
  decisions: () => import('./modes/decisions.js'),
  quotas: () => import('./modes/quotas.js'),
};

const { mode = 'forwarding', rest } = splitMode(process.argv.slice(2));
const load = MODES[mode];
if (load === undefined) {
  process.stderr.write(`bench: unknown --mode ${mode} (one of ${Object.keys(MODES).join(', ')})\n`);
  process.exit(2);
}
load()
  .then((m) => m.run(rest))
  .then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    },
  );
