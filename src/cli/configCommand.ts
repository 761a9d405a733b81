/**
 * `portaria config check [--config FILE] [-o json]`: what the gateway would read at start,
 * checked without starting it: the configuration (file, environment, validation), the
 * keys directory (a signing key for token.algorithm), the clients file, the admin token
 * file, the trusted issuers' key files, the public listener's TLS files, and the route
 * table. No port is opened, nothing
 * is written, no remote JWKS is fetched. Every problem is listed, not just the first.
 * Exit 0 with a short summary, or 1 with the problems.
 */
import { loadCertificateTrust } from '../certificates/certificateTrust.js';
import { readAdminToken } from '../config/adminTokenFile.js';
import { ConfigError } from '../config/configError.js';
import { loadConfig } from '../config/loadConfig.js';
import type { Config } from '../config/types.js';
import { StaticKeySet } from '../issuers/staticKeySet.js';
import { loadProfiledClients, loadProfiledKeyRing } from '../profile/profileLoads.js';
import { compileRouteTable } from '../proxy/routeTable.js';
import { loadTlsMaterial, tlsSettingsOf } from '../tls/tlsMaterial.js';
import {
  AlreadyReported,
  type CliContext,
  expectPositionals,
  jsonLines,
  OUTPUT_HELP,
  OUTPUT_OPTION,
  outputFormat,
  parseCommandArgs,
  UsageError,
  unknownCommand,
  wantsHelp,
} from './args.js';
import { configFileOf } from './gatewayConfig.js';
import { alignHelp } from './helpText.js';

export const CONFIG_GROUP_HELP = alignHelp(`Usage: portaria config <command> [options]

Commands:
  check   validate a configuration and the files it names, without starting anything

Run "portaria config check --help" for its options.
`);

const CHECK_HELP = alignHelp(`Usage: portaria config check [--config FILE] [-o json]

Loads the configuration as the gateway does (the file, then the PORTARIA_* environment
variables, then validation) and everything it names: the keys directory (a signing key
for token.algorithm), the clients file, the admin token file, the trusted issuers' key
files, the TLS files and the routes. Starts nothing, opens no port, writes nothing, fetches no remote
JWKS. Exit 0 and a summary when the gateway would start with it; exit 1 with every
problem otherwise.

Options:
  --config FILE        the configuration file (default: $PORTARIA_CONFIG)
${OUTPUT_HELP}
`);

/** What `config check -o json` prints (docs/cli.md). */
export interface CheckReport {
  readonly ok: boolean;
  readonly file: string;
  readonly problems: readonly string[];
  readonly warnings: readonly string[];
  readonly summary: CheckSummary | null;
}

interface CheckSummary {
  readonly publicListener: string;
  readonly adminListener: string;
  readonly adminApi: boolean;
  readonly algorithm: string;
  readonly signingKid: string | null;
  readonly keys: number;
  readonly clients: number;
  readonly routes: number;
  readonly defaultUpstream: boolean;
  readonly issuers: number;
  readonly revocationStore: string;
  /** `profile` (docs/fapi.md). */
  readonly profile: string;
  /** `mode` (docs/authorizer.md). */
  readonly mode: string;
  /** The decision listeners (`host:port`), empty in `mode: proxy`. */
  readonly decisionListeners: readonly string[];
}

export async function runConfigCommand(args: readonly string[], ctx: CliContext): Promise<void> {
  const [command, ...rest] = args;
  if (command === undefined) throw new UsageError('config', 'missing command');
  if (command === '--help' || command === '-h') return ctx.out(CONFIG_GROUP_HELP);
  if (command === 'check') return check(rest, ctx);
  throw unknownCommand('config', command, ['check']);
}

async function check(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(CHECK_HELP);
  const cmd = 'config check';
  const parsed = parseCommandArgs(cmd, args, { config: { type: 'string' }, ...OUTPUT_OPTION });
  expectPositionals(cmd, parsed, []);
  const format = outputFormat(cmd, parsed);
  const file = configFileOf(parsed, ctx);
  if (file === undefined) throw new UsageError(cmd, 'missing --config (or $PORTARIA_CONFIG)');
  const report = await checkConfiguration(file, ctx);
  if (format === 'json') {
    ctx.out(jsonLines(report));
    if (!report.ok) throw new AlreadyReported();
    return;
  }
  // Exit 1, every problem on stderr below one head line (main.ts); warnings once it is ok.
  if (!report.ok) throw new ConfigError(report.problems, report.file);
  for (const warning of report.warnings) ctx.err(`warning: ${warning}\n`);
  ctx.out(summaryText(report.summary as CheckSummary, report.file));
}

export async function checkConfiguration(file: string, ctx: CliContext): Promise<CheckReport> {
  let config: Config;
  try {
    config = await loadConfig({ file, env: ctx.env, cwd: ctx.cwd });
  } catch (error) {
    return { ok: false, file, problems: problemsOf(error), warnings: [], summary: null };
  }
  const problems: string[] = [];
  const settle = async <T>(load: Promise<T>): Promise<T | null> => {
    try {
      return await load;
    } catch (error) {
      problems.push(...problemsOf(error));
      return null;
    }
  };
  const [ring, clients] = await Promise.all([
    settle(loadProfiledKeyRing(config)),
    settle(loadProfiledClients(config)),
    settle(readAdminToken(config.admin.tokenFile)),
    config.server.tls.enabled ? settle(loadTlsMaterial(tlsSettingsOf(config))) : null,
    ...config.issuers.flatMap((issuer, index) =>
      issuer.keyFile === null ? [] : [settle(new StaticKeySet(issuer, { index }).load())],
    ),
    // The client certificate header's CA and CRL files, read as start reads them.
    ...(config.clientCertificate.source === 'header'
      ? [
          settle(
            loadCertificateTrust(
              config.clientCertificate.caFiles,
              config.clientCertificate.crlFiles,
            ),
          ),
        ]
      : []),
  ]);
  await settle(Promise.resolve().then(() => compileRouteTable(config)));
  const warnings: string[] = [];
  if (config.routes.length === 0 && config.upstream.default === null) {
    warnings.push(
      'no routes and no upstream.default: every request but the token operation gets 404',
    );
  }
  if (
    config.oauth.enabled &&
    config.oauth.replayStore === 'local' &&
    config.revocation.store === 'redis'
  ) {
    warnings.push(
      'oauth.replayStore is local beside a Redis revocation store: each replica remembers used client assertions alone, so one private_key_jwt assertion is accepted once per replica (leave oauth.replayStore unset, or set it to redis)',
    );
  }
  return {
    ok: problems.length === 0,
    file,
    problems,
    warnings,
    summary: {
      publicListener: `${config.server.host}:${config.server.port}`,
      adminListener: `${config.admin.host}:${config.admin.port}`,
      adminApi: config.admin.tokenFile !== null,
      algorithm: config.token.algorithm,
      signingKid: ring === null ? null : safeSigningKid(ring),
      keys: ring?.jwks().keys.length ?? 0,
      clients: clients?.size ?? 0,
      routes: config.routes.length,
      defaultUpstream: config.upstream.default !== null,
      issuers: config.issuers.length,
      revocationStore: config.revocation.store,
      profile: config.profile,
      mode: config.mode,
      decisionListeners: decisionListeners(config),
    },
  };
}

function decisionListeners(config: Config): string[] {
  if (config.mode === 'proxy') return [];
  const { host, port, grpc } = config.authorizer;
  return [`http ${host}:${port}`, ...(grpc.enabled ? [`grpc ${host}:${grpc.port}`] : [])];
}

function safeSigningKid(ring: { readonly signingKey: { readonly kid: string } }): string | null {
  try {
    return ring.signingKey.kid;
  } catch {
    return null;
  }
}

function problemsOf(error: unknown): string[] {
  if (error instanceof ConfigError) return [...error.problems];
  return [error instanceof Error ? error.message : String(error)];
}

function summaryText(s: CheckSummary, file: string): string {
  return [
    `ok: ${file}`,
    `  listeners:   public ${s.publicListener}, admin ${s.adminListener}`,
    `  signing:     ${s.algorithm}, key ${s.signingKid ?? 'none'} (${s.keys} published)`,
    `  clients:     ${s.clients}`,
    `  routes:      ${s.routes}${s.defaultUpstream ? ' and a default upstream' : ', no default upstream'}`,
    `  issuers:     ${s.issuers}`,
    `  revocation:  ${s.revocationStore}`,
    `  admin API:   ${s.adminApi ? 'on' : 'off (no admin.tokenFile)'}`,
    `  profile:     ${s.profile}`,
    `  mode:        ${s.mode}${s.decisionListeners.length > 0 ? ` (decisions: ${s.decisionListeners.join(', ')})` : ''}`,
    '',
  ].join('\n');
}
