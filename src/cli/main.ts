#!/usr/bin/env node
/**
 * `portaria`: the operator's command line (clients, signing keys, revocation, config check).
 *
 * Exit codes: 0 success, 1 failure (bad file, refused change, I/O error), 2 usage error.
 * Every error is one line on stderr, `portaria: <command>: <what>` (a file with several
 * problems lists them one per line below it); never a stack trace.
 */
import { likelyMeant } from '../lib/nearestName.js';
import { AlreadyReported, type CliContext, UsageError, unknownCommand } from './args.js';
import { runClientsCommand } from './clientsCommand.js';
import { runConfigCommand } from './configCommand.js';
import { alignHelp } from './helpText.js';
import { runKeysCommand } from './keysCommand.js';
import { packageVersion } from './packageVersion.js';
import { runQuotaCommand } from './quotaCommand.js';
import { runRevokeCommand } from './revokeCommand.js';

const HELP = alignHelp(`Usage: portaria <group> <command> [options]

Operator commands for the Portaria API gateway.

Groups:
  clients   add, list, enable, disable, remove clients and rotate their secrets
  keys      generate, rotate, list and remove token-signing keys
  revoke    revoke a token (--jti) or a client's tokens (--client), list revocations
  quota     show or reset a partner's quota counters (show SUBJECT, reset SUBJECT)
  config    check a configuration and the files it names without starting the gateway
  help      show help: "portaria help", "portaria help clients", "portaria help keys list"

Options:
  -h, --help      show help (also after a group or command)
  -V, --version   show the version

Gateway settings: --config FILE / $PORTARIA_CONFIG, the gateway's configuration file,
  before or after the command ("portaria --config FILE clients list"): every command
  then takes its files, algorithm, timing and admin listener from it (its own options
  still win). Without one:
Files: --clients-file / $PORTARIA_CLIENTS__FILE (default ./data/clients.json),
  --keys-dir / $PORTARIA_KEYS__DIR (default ./data/keys).
Admin API (revoke, quota): --admin-url / $PORTARIA_ADMIN_URL (default http://127.0.0.1:9091),
  --token-file / $PORTARIA_ADMIN__TOKEN_FILE.
Lists (clients list, keys list, revoke list) take -o json (--output json).
These options go after the command; only --config may also come before the group.
`);

const GROUPS: Readonly<
  Record<string, (args: readonly string[], ctx: CliContext) => Promise<void>>
> = {
  clients: runClientsCommand,
  keys: runKeysCommand,
  revoke: runRevokeCommand,
  quota: runQuotaCommand,
  config: runConfigCommand,
};

/** Options of the commands, named when given before the group (where only --config goes). */
const COMMAND_OPTIONS = new Set([
  '--clients-file',
  '--keys-dir',
  '--admin-url',
  '--token-file',
  '--output',
  '-o',
  '--alg',
]);

/**
 * `--config FILE` (or `--config=FILE`) before the group, as the top-level help offers it:
 * the file and the arguments after it. A repeated one and the command's own win, as
 * parseArgs lets a later option win.
 */
function leadingConfig(args: readonly string[]): { file?: string; rest: readonly string[] } {
  let file: string | undefined;
  let at = 0;
  for (;;) {
    const arg = args[at];
    if (arg === '--config') {
      const value = args[at + 1];
      if (value === undefined || value.startsWith('-')) {
        throw new UsageError('', 'option --config needs a value');
      }
      file = value;
      at += 2;
    } else if (arg?.startsWith('--config=')) {
      file = arg.slice('--config='.length);
      at += 1;
    } else break;
    if (file === '') throw new UsageError('', 'option --config needs a non-empty value');
  }
  return { ...(file === undefined ? {} : { file }), rest: args.slice(at) };
}

async function run(args: readonly string[], ctx: CliContext): Promise<void> {
  const [group, ...rest] = args;
  if (group === undefined) throw new UsageError('', 'missing command');
  if (group === '--help' || group === '-h') return ctx.out(HELP);
  if (group === '--version' || group === '-V') {
    return ctx.out(`portaria ${await packageVersion()}\n`);
  }
  // `portaria help clients add` is `portaria clients add --help`.
  if (group === 'help') return rest.length === 0 ? ctx.out(HELP) : run([...rest, '--help'], ctx);
  const command = GROUPS[group];
  if (command !== undefined && Object.hasOwn(GROUPS, group)) return command(rest, ctx);
  if (group.startsWith('-')) {
    const name = group.split('=')[0] ?? group;
    if (COMMAND_OPTIONS.has(name)) {
      throw new UsageError(
        '',
        `option ${name} goes after the command (portaria <group> <command> ${name} …)`,
      );
    }
    const meant = likelyMeant(name, ['--config', '--help', '--version']);
    throw new UsageError(
      '',
      `unknown option ${group}${meant === null ? '' : ` (did you mean ${meant}?)`}`,
    );
  }
  throw unknownCommand('', group, [...Object.keys(GROUPS), 'help']);
}

/** The one stderr line (plus a file's problem list) and exit code for a failure. */
function errorLine(err: unknown, args: readonly string[]): { text: string; code: number } {
  if (err instanceof UsageError) {
    const where = err.command === '' ? 'portaria' : `portaria ${err.command}`;
    const prefix = err.command === '' ? 'portaria' : `portaria: ${err.command}`;
    return { text: `${prefix}: ${err.message} (see "${where} --help")`, code: 2 };
  }
  // `revoke` has no sub-command but `list`: its second argument is usually an option.
  const command =
    args[0] === 'revoke' && args[1] !== 'list' ? 'revoke' : args.slice(0, 2).join(' ');
  // ConfigError's message is a head line plus one line per problem in the file.
  const message = err instanceof Error ? err.message : String(err);
  return { text: `portaria: ${command}: ${message}`, code: 1 };
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY)
    process.stderr.write('Reading the secret from stdin (end with Ctrl-D)…\n');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

// A closed pipe (`portaria clients list | head -1`) is not worth a stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
});

let argv: readonly string[] = process.argv.slice(2);
const context: CliContext = {
  env: process.env,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  readStdin,
  now: () => new Date(),
  cwd: process.cwd(),
};
try {
  const { file, rest } = leadingConfig(argv);
  // Errors name the command as given after the leading options.
  argv = rest;
  await run(rest, file === undefined ? context : { ...context, configFile: file });
} catch (err) {
  if (err instanceof AlreadyReported) process.exitCode = 1;
  else reportFailure(err);
}

function reportFailure(err: unknown): void {
  const { text, code } = errorLine(err, argv);
  process.stderr.write(`${text}\n`);
  process.exitCode = code;
}
