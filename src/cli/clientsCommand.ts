/**
 * `portaria clients add|list|disable`: edits the clients file the gateway loads at start.
 *
 * Generated secrets (256 random bits) are printed once and stored as `sha256:` hashes;
 * a secret chosen by the operator (`--secret-stdin`) is stored as `scrypt:`. Nothing
 * ever prints a stored hash. Ids, scopes and lifetimes are checked with the registry's
 * own rules, so the CLI cannot write a file the gateway would refuse.
 */
import { clientIdProblem, lifetimeProblem, scopesProblems } from '../clients/clientRegistry.js';
import {
  addClient,
  type ClientsFileEntry,
  disableClient,
  listClients,
} from '../clients/clientsFile.js';
import { generateSecret, hashChosenSecret, hashGeneratedSecret } from '../clients/secretHash.js';
import {
  type CliContext,
  envValue,
  expectPositionals,
  type OptionsConfig,
  type ParsedCommand,
  parseCommandArgs,
  stringValue,
  UsageError,
  wantsHelp,
} from './args.js';

export const DEFAULT_CLIENTS_FILE = './data/clients.json';
const MIN_CHOSEN_SECRET = 16;
const MAX_CHOSEN_SECRET = 1024;

const FILE_OPTION: OptionsConfig = { 'clients-file': { type: 'string' } };

const FILE_HELP = `  --clients-file PATH  clients file (default: $PORTARIA_CLIENTS_FILE, else ${DEFAULT_CLIENTS_FILE})`;

export const CLIENTS_HELP = `Usage: portaria clients <command> [options]

Manage the clients allowed to request access tokens.

Commands:
  add <id> --scopes a,b   register a client and print its new secret once
  list                    show every client (never a secret or hash)
  disable <id>            refuse tokens to a client from the gateway's next start

Run "portaria clients <command> --help" for a command's options.
`;

const ADD_HELP = `Usage: portaria clients add <id> --scopes SCOPE[,SCOPE…] [--lifetime SECONDS] [--secret-stdin]

Registers a client. By default a 256-bit secret is generated, printed once and stored
only as a hash. With --secret-stdin the secret is read from standard input instead
(at least ${MIN_CHOSEN_SECRET} characters) and stored as a scrypt hash.

Options:
  --scopes LIST        comma-separated scopes the client's tokens carry (required)
  --lifetime SECONDS   token lifetime for this client, 1 to 86400 (default: the gateway's)
  --secret-stdin       read the secret from standard input
${FILE_HELP}
`;

const LIST_HELP = `Usage: portaria clients list

Shows each client's id, scopes, token lifetime, disabled flag and number of secrets.

Options:
${FILE_HELP}
`;

const DISABLE_HELP = `Usage: portaria clients disable <id>

Marks a client disabled: the gateway refuses its credentials from its next start.

Options:
${FILE_HELP}
`;

export async function runClientsCommand(args: readonly string[], ctx: CliContext): Promise<void> {
  const [command, ...rest] = args;
  if (command === undefined) throw new UsageError('clients', 'missing command');
  if (command === '--help' || command === '-h') return ctx.out(CLIENTS_HELP);
  if (command === 'add') return add(rest, ctx);
  if (command === 'list') return list(rest, ctx);
  if (command === 'disable') return disable(rest, ctx);
  throw new UsageError('clients', `unknown command ${JSON.stringify(command)}`);
}

async function add(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(ADD_HELP);
  const cmd = 'clients add';
  const parsed = parseCommandArgs(cmd, args, {
    ...FILE_OPTION,
    scopes: { type: 'string' },
    lifetime: { type: 'string' },
    'secret-stdin': { type: 'boolean' },
  });
  const [id] = expectPositionals(cmd, parsed, ['id']) as [string];
  const idProblem = clientIdProblem(id);
  if (idProblem) throw new UsageError(cmd, `client id ${JSON.stringify(id)}: ${idProblem}`);
  const scopesText = stringValue(parsed, 'scopes');
  if (scopesText === undefined) throw new UsageError(cmd, 'missing --scopes');
  const scopes = scopesText.split(',').map((s) => s.trim());
  const [scopeProblem] = scopesProblems(scopes, '--scopes');
  if (scopeProblem) throw new UsageError(cmd, scopeProblem);
  const entry: ClientsFileEntry = { id, secrets: [], scopes };
  const lifetimeText = stringValue(parsed, 'lifetime');
  if (lifetimeText !== undefined) {
    const lifetime = /^[0-9]{1,9}$/.test(lifetimeText) ? Number(lifetimeText) : Number.NaN;
    const problem = lifetimeProblem(lifetime);
    if (problem) throw new UsageError(cmd, `--lifetime: ${problem}`);
    entry.lifetimeSeconds = lifetime;
  }
  const file = clientsFile(parsed, ctx);

  if (parsed.values['secret-stdin'] === true) {
    const secret = stripNewline(await ctx.readStdin());
    const length = [...secret].length;
    if (length < MIN_CHOSEN_SECRET || length > MAX_CHOSEN_SECRET) {
      throw new UsageError(
        cmd,
        `the secret on stdin must be ${MIN_CHOSEN_SECRET} to ${MAX_CHOSEN_SECRET} characters (got ${length})`,
      );
    }
    entry.secrets.push({ hash: await hashChosenSecret(secret) });
    await addClient(file, entry);
    ctx.out(`Added client ${JSON.stringify(id)} (scopes: ${scopes.join(' ')}) to ${file}.\n`);
    ctx.out('The secret read from stdin is stored as a scrypt hash.\n');
    return;
  }

  const secret = generateSecret();
  entry.secrets.push({ hash: hashGeneratedSecret(secret) });
  await addClient(file, entry);
  ctx.out(`Added client ${JSON.stringify(id)} (scopes: ${scopes.join(' ')}) to ${file}.\n`);
  ctx.out(`client id:     ${id}\n`);
  ctx.out(`client secret: ${secret}\n`);
  ctx.out('Store the secret now: it cannot be shown again (only its hash is kept).\n');
}

async function list(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(LIST_HELP);
  const cmd = 'clients list';
  const parsed = parseCommandArgs(cmd, args, FILE_OPTION);
  expectPositionals(cmd, parsed, []);
  const file = clientsFile(parsed, ctx);
  const clients = await listClients(file);
  if (clients.length === 0) return ctx.out(`No clients in ${file}.\n`);
  const rows = [
    ['ID', 'SCOPES', 'LIFETIME', 'DISABLED', 'SECRETS'],
    ...clients.map((c) => [
      c.id,
      c.scopes.join(','),
      c.lifetimeSeconds === null ? 'default' : `${c.lifetimeSeconds}s`,
      c.disabled ? 'yes' : 'no',
      String(c.secretCount),
    ]),
  ];
  const widths =
    rows[0]?.map((_, col) => Math.max(...rows.map((r) => (r[col] ?? '').length))) ?? [];
  for (const row of rows) {
    ctx.out(
      `${row
        .map((cell, col) => cell.padEnd(widths[col] ?? 0))
        .join('  ')
        .trimEnd()}\n`,
    );
  }
}

async function disable(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(DISABLE_HELP);
  const cmd = 'clients disable';
  const parsed = parseCommandArgs(cmd, args, FILE_OPTION);
  const [id] = expectPositionals(cmd, parsed, ['id']) as [string];
  const file = clientsFile(parsed, ctx);
  const changed = await disableClient(file, id);
  ctx.out(
    changed
      ? `Disabled client ${JSON.stringify(id)} in ${file} (effective from the gateway's next start).\n`
      : `Client ${JSON.stringify(id)} was already disabled.\n`,
  );
}

function clientsFile(parsed: ParsedCommand, ctx: CliContext): string {
  return (
    stringValue(parsed, 'clients-file') ??
    envValue(ctx, 'PORTARIA_CLIENTS_FILE') ??
    DEFAULT_CLIENTS_FILE
  );
}

/** Drops the one line ending `echo` or a here-string adds. */
function stripNewline(text: string): string {
  return text.replace(/\r?\n$/, '');
}
