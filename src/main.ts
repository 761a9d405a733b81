#!/usr/bin/env node
/**
 * Process entry: load and validate the config (every problem listed, exit 1), build the
 * app, listen, and drain on SIGTERM/SIGINT (exit 0 once in-flight requests finished).
 *
 *   portaria-gateway --config FILE   production: keys and clients must exist
 *   portaria-gateway --demo          `npm start`: embedded defaults, demo data, demo upstream
 *
 * With `server.workers` above 1 this process becomes the group's primary
 * (cluster/startPrimary.ts) and runs this file again as each worker, which joins the
 * group (cluster/joinCluster.ts) before building its app (docs/workers.md).
 */
// Only Node's own modules load before the signal handlers below are installed; the
// gateway's modules (a few hundred milliseconds to evaluate: pino, prom-client, undici,
// ioredis, ajv…) are imported in main(), after them. Statically imported, they ran first,
// and a SIGHUP in that time met Node's default action: the process exited (129).
import cluster from 'node:cluster';
import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { App } from './app/createApp.js';
import { processFlags } from './cli/processFlags.js';

const USAGE = `Usage: node dist/main.js --config FILE | --demo

  --config FILE   YAML configuration (or set PORTARIA_CONFIG)
  --demo          try it: local demo data in .portaria-demo/ and a demo upstream
  --help          this text
`;

/**
 * SIGHUP from the first moment main runs (Node's default for SIGHUP is to exit): before
 * the gateway listens it is remembered and the reload runs once started; then it
 * reloads clients, keys and routes at once.
 */
let sighupWhileStarting = false;
let onSighup: () => void = () => {
  sighupWhileStarting = true;
};
process.on('SIGHUP', () => onSighup());

/**
 * The demo clients file this run created, while its secret has not been shown (the
 * secret is printed once the gateway listens). A start that ends before that — a
 * failure, or a stop signal — deletes it, so that the next start creates the demo client
 * afresh and shows its secret: the only copy of the secret is the one printed.
 */
let unshownDemoClients: string | null = null;

function forgetUnshownDemoClient(): void {
  if (unshownDemoClients !== null) rmSync(unshownDemoClients, { force: true });
  unshownDemoClients = null;
}

/**
 * SIGTERM and SIGINT from the first moment too: before the gateway listens there is
 * nothing to drain, so the process exits at once — through `process.exit`, which runs
 * the exit hooks (a held revocation-file lock is released; Node's default action for the
 * signal would leave it behind for the next start to wait out). Then: the drain.
 */
let onStop: (signal: NodeJS.Signals) => void = (signal) => {
  forgetUnshownDemoClient();
  process.exit(signal === 'SIGINT' ? 130 : 143);
};
process.on('SIGTERM', () => onStop('SIGTERM'));
process.on('SIGINT', () => onStop('SIGINT'));

async function main(): Promise<number> {
  const early = await processFlags(process.argv.slice(2), {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  });
  if (early !== null) return early;
  let values: {
    config?: string | undefined;
    demo?: boolean | undefined;
    help?: boolean | undefined;
  };
  try {
    ({ values } = parseArgs({
      options: {
        config: { type: 'string' },
        demo: { type: 'boolean' },
        help: { type: 'boolean' },
      },
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`portaria: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (values.demo === true && values.config !== undefined) {
    // (PORTARIA_CONFIG with --demo is `npm start` in a configured shell: the file wins.)
    process.stderr.write(`portaria: --config and --demo exclude each other\n${USAGE}`);
    return 2;
  }
  const [
    { createApp, sourceBaseline },
    { ConfigError },
    { loadConfig },
    { startDemoUpstream },
    { DEMO_CLIENT_ID, prepareDemoData },
    { printDemoWalkthrough },
    { MAX_WORKERS },
    { workerCount },
  ] = await Promise.all([
    import('./app/createApp.js'),
    import('./config/configError.js'),
    import('./config/loadConfig.js'),
    import('./demo/demoUpstream.js'),
    import('./demo/prepareDemoData.js'),
    import('./demo/walkthrough.js'),
    import('./config/schema.js'),
    import('./cluster/availableCpus.js'),
  ]);
  const demo = values.demo === true && values.config === undefined && !process.env.PORTARIA_CONFIG;
  const demoUpstream = demo ? await startDemoUpstream() : null;
  try {
    // The environment is captured once: reloads re-read the file, not process.env.
    const env = { ...process.env };
    const cwd = process.cwd();
    const file = values.config ?? env.PORTARIA_CONFIG;
    const configSince = file && !demo ? sourceBaseline([resolve(cwd, file)]) : undefined;
    await configSince?.catch(() => undefined);
    const config = await loadConfig({ file, env, cwd, demo, demoUpstream: demoUpstream?.url });
    const workers = cluster.isPrimary ? workerCount(config.server.workers, MAX_WORKERS) : 1;
    if (workers > 1 && !demo) {
      const { startPrimary } = await import('./cluster/startPrimary.js');
      const primary = await startPrimary(
        config,
        workers,
        file ? { reread: () => loadConfig({ file, env, cwd }) } : {},
      );
      stopOnSignals(primary);
      onSighup = () => {
        primary.logger.info({ signal: 'SIGHUP' }, 'signal received: reloading every worker');
        primary.reload();
      };
      if (sighupWhileStarting) onSighup();
      return -1;
    }
    const joined = cluster.isWorker
      ? await (await import('./cluster/joinCluster.js')).joinCluster(config)
      : null;
    const created = demo
      ? await prepareDemoData({
          keysDir: config.keys.dir,
          clientsFile: config.clients.file,
          algorithm: config.token.algorithm,
          creatingClient: () => {
            unshownDemoClients = config.clients.file;
          },
        })
      : null;
    const app = await createApp({
      config,
      ...(joined === null
        ? {}
        : { worker: joined.parts, logDestination: joined.parts.logDestination }),
      ...(file && !demo
        ? {
            configSource: {
              file: resolve(cwd, file),
              reload: () => loadConfig({ file, env, cwd }),
              since: configSince,
            },
          }
        : {}),
    });
    const { publicUrl, adminUrl } = await app.listen();
    if (demo) {
      printDemoWalkthrough({
        publicUrl,
        adminUrl,
        clientId: DEMO_CLIENT_ID,
        secret: created?.createdSecret ?? null,
      });
      unshownDemoClients = null;
    }
    const stop = stopOnSignals(app, () => demoUpstream?.server.close());
    joined?.serve(
      {
        readiness: () => app.readiness(),
        metricsSnapshot: () => app.metricsSnapshot(),
        reload: () => app.reload(),
        stop,
      },
      publicUrl,
    );
    onSighup = () => {
      app.logger.info({ signal: 'SIGHUP' }, 'signal received: reloading');
      void app.reload();
    };
    if (sighupWhileStarting) onSighup();
    return -1;
  } catch (error) {
    demoUpstream?.server.close();
    // The start failed before the new demo secret was shown (a port in use, say).
    forgetUnshownDemoClient();
    if (error instanceof ConfigError) {
      // The demo's files are ours: a damaged one is fixed by starting afresh.
      const hint =
        demo && error.message.includes('.portaria-demo')
          ? '\n(demo mode: delete the .portaria-demo directory to start with fresh demo data)'
          : '';
      process.stderr.write(`portaria: ${error.message}${hint}\n`);
      return 1;
    }
    throw error;
  }
}

/**
 * SIGTERM/SIGINT from now on drain `target` (an app, or a group's primary) and exit 0.
 * A second stop signal waits for the one drain (shutdown() is idempotent; `once` would
 * leave it to Node's default: exit at once); a third (Ctrl-C pressed again while
 * draining) exits at once. Returns the drain alone (a group's primary asking a worker).
 */
function stopOnSignals(
  target: { readonly logger: App['logger']; shutdown(): Promise<void> },
  stopped: () => void = () => {},
): () => void {
  const drain = () => {
    target.shutdown().then(
      () => {
        stopped();
        process.exit(0);
      },
      (error: unknown) => {
        target.logger.error({ err: error }, 'shutdown failed');
        target.logger.flush(() => process.exit(1));
      },
    );
  };
  let stopSignals = 0;
  onStop = (signal) => {
    if (++stopSignals >= 3) process.exit(signal === 'SIGINT' ? 130 : 143);
    target.logger.info({ signal }, 'signal received');
    drain();
  };
  return drain;
}

// A failed start exits at once: a connection opened before the failure (Redis
// reconnecting, a key set refresh) must not keep a half-started process alive.
main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(`portaria: failed to start: ${(error as Error).message}\n`);
    process.exit(1);
  },
);
