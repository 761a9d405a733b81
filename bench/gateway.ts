/**
 * The system under test: the real gateway from `createApp`, with a real ES256 key and a
 * clients file in a work directory, forwarding every path to the bench upstream (the
 * `upstream.default` route). Everything is on as in production: the access log at `info`
 * on the destination production picks for its stdout (`outputDestination`) — a named
 * pipe read by the bench's log sink, as stdout is read by a container runtime
 * (`--log-to`), else a file in the work directory — and the Prometheus metrics.
 *
 * Announces `{ url, adminUrl, authorizerUrl, grpcUrl, token, logFile }` (`authorizerUrl` and
 * `grpcUrl` '' unless the overrides set `mode: authorizer` or `both`): the token was issued by the gateway's own
 * token operation, so every measured request verifies a real JWT (signature once, then the
 * verified-token cache; revocation on every request).
 *
 *   node dist-test/bench/gateway.js http://127.0.0.1:<port> [--dir D] [--log-level info]
 *                                   [--log-to FIFO] [--keys-dir K] [--overrides F.json]
 *                                   [--tracing on|off] [--profile FILE]
 *
 * `--keys-dir` loads a key the bench made (so peers verify the same tokens); `--overrides`
 * is a JSON object merged over the settings below (the modes' cache sizes, routes,
 * limits, revocation file). `--tracing`: `tracing.enabled` set on or off, the `OTEL_*`
 * variables read from the environment; absent, no `tracing` section at all.
 *
 * `--profile FILE`: a V8 CPU profile from SIGUSR2 to the stop (start-up left out), written
 * to FILE — the differential profiles of bench/RESULTS.md (load with wrk, SIGUSR2,
 * then SIGTERM).
 *
 * (`--log-level silent` exists for diagnosis only: the bench's figure is with the log on.)
 */
import { open as openFd } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { Agent, fetch as undiciFetch } from 'undici';
import { createApp } from '../src/app/createApp.js';
import { hashGeneratedSecret } from '../src/clients/secretHash.js';
import { validateConfig } from '../src/config/validateConfig.js';
import { generateSigningKey, writeSigningKey } from '../src/keys/generateKey.js';
import { outputDestination } from '../src/observability/logger.js';
import { BENCH_CLIENT_ID, BENCH_CLIENT_SECRET, TOKEN_PATH } from './lib/benchClaims.js';
import { announce, onStop } from './lib/childProtocol.js';

const { values, positionals } = parseArgs({
  options: {
    dir: { type: 'string' },
    'log-level': { type: 'string', default: 'info' },
    'log-to': { type: 'string' },
    'keys-dir': { type: 'string' },
    overrides: { type: 'string' },
    tracing: { type: 'string' },
    profile: { type: 'string' },
  },
  allowPositionals: true,
  strict: true,
});
const upstream = positionals[0];
if (upstream === undefined) {
  process.stderr.write(
    'usage: node gateway.js http://127.0.0.1:<port> [--dir D] [--log-level L] [--log-to FIFO]\n',
  );
  process.exit(2);
}
const givenDir = values.dir;
const dir = givenDir ?? (await mkdtemp(join(tmpdir(), 'portaria-bench-')));
await mkdir(dir, { recursive: true });
const keysDir = values['keys-dir'] ?? join(dir, 'keys');
if (values['keys-dir'] === undefined) {
  await writeSigningKey(keysDir, await generateSigningKey('ES256', new Date()));
}
const clientsFile = join(dir, 'clients.json');
await writeFile(
  clientsFile,
  JSON.stringify({
    clients: [
      {
        id: BENCH_CLIENT_ID,
        secrets: [{ hash: hashGeneratedSecret(BENCH_CLIENT_SECRET) }],
        scopes: ['orders:read'],
      },
    ],
  }),
);
const overrides =
  values.overrides === undefined
    ? {}
    : (JSON.parse(await readFile(values.overrides, 'utf8')) as Record<string, unknown>);
const config = validateConfig(
  merged(
    {
      server: { host: '127.0.0.1', port: 0, shutdownGraceMs: 1000 },
      admin: { host: '127.0.0.1', port: 0 },
      issuer: 'https://portaria.bench',
      audience: 'bench-api',
      keys: { dir: keysDir },
      clients: { file: clientsFile },
      upstream: { default: { upstream, scopes: ['orders:read'] } },
      log: { level: values['log-level'] },
      ...(values.tracing === undefined ? {} : { tracing: { enabled: values.tracing === 'on' } }),
    },
    overrides,
  ),
  { baseDir: dir },
);
// Production logs to stdout, a pipe the container runtime reads: `--log-to <fifo>` (the
// bench's default, see logSink.ts) models that. Without it, a file in the work directory
// (an ext4 file write costs this process far more than a pipe write: bench/RESULTS.md).
const logFile = values['log-to'] ?? join(dir, 'gateway.log');
// Chosen as production chooses for its stdout (observability/logger.ts): a pipe is
// written from the event loop, a file through pino's asynchronous destination. Opening a
// FIFO waits for its reader (the log sink), off the event loop.
// The descriptor is the destination's until the process exits.
const logFd = await promisify(openFd)(logFile, values['log-to'] === undefined ? 'a' : 'w');
const logDestination = outputDestination(logFd);
const app = await createApp({ config, logDestination });
const { publicUrl, adminUrl, authorizerUrl, grpcUrl } = await app.listen();

// Over TLS (`server.tls` in the overrides) the bench's own certificate, which no CA issued.
const dispatcher = publicUrl.startsWith('https:')
  ? new Agent({ connect: { rejectUnauthorized: false } })
  : undefined;
const res = await undiciFetch(publicUrl + TOKEN_PATH, {
  ...(dispatcher === undefined ? {} : { dispatcher }),
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ clientId: BENCH_CLIENT_ID, clientSecret: BENCH_CLIENT_SECRET }),
});
const body = (await res.json()) as Record<string, unknown>;
await dispatcher?.close();
const token = body.token_de_acesso ?? body.accesstoken;
if (res.status !== 200 || typeof token !== 'string') {
  process.stderr.write(
    `bench gateway: token request failed: ${res.status} ${JSON.stringify(body)}\n`,
  );
  process.exit(1);
}

const profileFile = values.profile;
const session = profileFile === undefined ? null : new Session();
let profiling = false;
// Listening before the announcement: a SIGUSR2 sent as soon as it is read must not kill.
if (session !== null) {
  session.connect();
  process.once('SIGUSR2', () => {
    profiling = true;
    void session.post('Profiler.enable').then(() => session.post('Profiler.start'));
  });
}
announce({ url: publicUrl, adminUrl, authorizerUrl, grpcUrl, token, logFile });
onStop(async () => {
  if (session !== null && profileFile !== undefined && profiling) {
    const { profile } = await session.post('Profiler.stop');
    await writeFile(profileFile, JSON.stringify(profile));
  }
  await app.shutdown();
  if (givenDir === undefined) await rm(dir, { recursive: true, force: true });
  return undefined;
});

/** `base` with `over` merged in: objects key by key, anything else (arrays too) replaced. */
function merged(
  base: Record<string, unknown>,
  over: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const was = out[key];
    out[key] = isObject(was) && isObject(value) ? merged(was, value) : value;
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
