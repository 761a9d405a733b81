/**
 * `portaria clients add|list|enable|disable|rotate-secret|set-auth|remove`: edits the clients file the
 * gateway loads at start (and reloads on change or SIGHUP when reload is enabled).
 *
 * Generated secrets (256 random bits) are printed once and stored as `sha256:` hashes;
 * a secret chosen by the operator (`--secret-stdin`) is stored as `scrypt:`. Nothing
 * ever prints a stored hash. Ids, scopes and lifetimes are checked with the registry's
 * own rules, so the CLI cannot write a file the gateway would refuse.
 */
import { lifetimeProblem, scopesProblems } from '../clients/clientRegistry.js';
import {
  addClient,
  type ClientsFileEntry,
  disableClient,
  enableClient,
  listClients,
  removeClient,
  rotateClientSecret,
  setClientAuth,
} from '../clients/clientsFile.js';
import { escapedId, lookalikesOf } from '../clients/lookalikeIds.js';
import { generateSecret, hashChosenSecret, hashGeneratedSecret } from '../clients/secretHash.js';
import { CLIENT_ID_RULE, clientIdProblem } from '../domain/clientId.js';
import {
  type CliContext,
  expectPositionals,
  jsonLines,
  type OptionsConfig,
  OUTPUT_HELP,
  OUTPUT_OPTION,
  outputFormat,
  type ParsedCommand,
  parseCommandArgs,
  stringValue,
  UsageError,
  wantsHelp,
} from './args.js';
import { AUTH_HELP, AUTH_OPTIONS, authFieldsOf } from './clientAuthOptions.js';
import {
  CONFIG_HELP,
  CONFIG_OPTION,
  clientsFileFor,
  DEFAULT_CLIENTS_FILE,
  gatewayConfig,
} from './gatewayConfig.js';
import { alignHelp } from './helpText.js';
import { ADMIN_HELP, ADMIN_OPTIONS, revokeClientTokens } from './revokeCommand.js';
import { table } from './table.js';

const MIN_CHOSEN_SECRET = 16;
const MAX_CHOSEN_SECRET = 1024;
const DEFAULT_OVERLAP = '24h';
const MAX_OVERLAP_SECONDS = 365 * 86_400;
const UNIT_SECONDS: Readonly<Record<string, number>> = { '': 1, s: 1, m: 60, h: 3600, d: 86_400 };

/** `clients list`'s AUTH column: short names of the methods. */
const AUTH_SHORT: Readonly<Record<string, string>> = {
  client_secret_basic: 'basic',
  client_secret_post: 'post',
  private_key_jwt: 'jwt',
};

const FILE_OPTION: OptionsConfig = { 'clients-file': { type: 'string' }, ...CONFIG_OPTION };

const FILE_HELP = `  --clients-file PATH  clients file (default: the configuration's clients.file, else
                       $PORTARIA_CLIENTS__FILE, else ${DEFAULT_CLIENTS_FILE})
${CONFIG_HELP}`;

export const CLIENTS_HELP = alignHelp(`Usage: portaria clients <command> [options]

Manage the clients allowed to request access tokens.

Commands:
  add <id> --scopes a,b   register a client and print its new secret once
  list                    show every client (never a secret or hash); -o json
  enable <id>             accept a disabled client's credentials again
  disable <id>            refuse a client's credentials (a running gateway reloads the file)
  rotate-secret <id>      add a new secret, print it once; the old one expires later
  set-auth <id>           change how it authenticates at the OAuth endpoints, its keys,
                          audiences and permissions
  remove <id>             delete a client (--revoke: revoke its tokens first)

Run "portaria clients <command> --help" for a command's options.
`);

const ADD_HELP =
  alignHelp(`Usage: portaria clients add <id> --scopes SCOPE[,SCOPE…] [--lifetime SECONDS] [--secret-stdin]
       portaria clients add <id> --scopes … --auth private_key_jwt --jwks FILE | --jwks-uri URL [--alg ES256]

Registers a client. The id is any Unicode text of ${CLIENT_ID_RULE}; ids are compared byte
for byte, so two spellings of one name (NFC "é", NFD "e" + U+0301) are two clients. By default a 256-bit secret is generated, printed once and stored
only as a hash. With --secret-stdin the secret is read from standard input instead
(at least ${MIN_CHOSEN_SECRET} characters) and stored as a scrypt hash.

Options:
  --scopes LIST        comma-separated scopes the client's tokens carry (required)
  --lifetime SECONDS   token lifetime for this client, 1 to 86400 (default: the gateway's)
  --secret-stdin       read the secret from standard input
${AUTH_HELP}
${FILE_HELP}
`);

const SET_AUTH_HELP =
  alignHelp(`Usage: portaria clients set-auth <id> [--auth METHODS] [--jwks FILE | --jwks-uri URL] [--alg ALG] [--audience AUD]… [--permission P]…

Changes how a client authenticates at the OAuth 2.0 endpoints (docs/oauth.md). Each
option given replaces that field; the others are kept. --clear-audiences and
--clear-permissions return to the defaults. The contract's JSON operation keeps
accepting the client's secrets whatever its methods.

Options:
${AUTH_HELP}
  --clear-audiences    back to the gateway's audience only
  --clear-permissions  no permissions
${FILE_HELP}
`);

const LIST_HELP = alignHelp(`Usage: portaria clients list [-o json]

Shows each client's id, scopes, token lifetime, disabled flag and number of secrets.

Options:
${OUTPUT_HELP}
${FILE_HELP}
`);

const ENABLE_HELP = alignHelp(`Usage: portaria clients enable <id>

Clears a client's disabled flag: the gateway accepts its credentials again once it has
reloaded the file (within reload.pollIntervalMs, or at once on SIGHUP). Tokens revoked
while it was disabled stay revoked.

Options:
${FILE_HELP}
`);

const DISABLE_HELP = alignHelp(`Usage: portaria clients disable <id>

Marks a client disabled: the gateway refuses its credentials once it has reloaded the file
(within reload.pollIntervalMs, or at once on SIGHUP). Tokens already issued stay valid
until they expire; revoke them to cut them off.

Options:
${FILE_HELP}
`);

const ROTATE_HELP = alignHelp(`Usage: portaria clients rotate-secret <id> [--overlap DURATION]

Generates a new 256-bit secret for a client, prints it once and stores only its
SHA-256 hash. The previous secret stays valid for the overlap (it keeps an earlier
expiry it already had), so callers can switch without a failed request. Also for
clients whose secret was chosen with --secret-stdin: the new secret is generated and
stored as a SHA-256 hash, like the secrets "clients add" generates.

A client holds at most two secrets: expired ones are removed first; a rotation while
two secrets are still valid is refused (wait for the older to expire, or use
--overlap 0).

Options:
  --overlap DURATION   how long the previous secret stays valid: 30m, 24h, 7d or
                       seconds, at most 365d (default ${DEFAULT_OVERLAP}); 0 ends it now
${FILE_HELP}
`);

const REMOVE_HELP = alignHelp(`Usage: portaria clients remove <id> [--revoke]

Deletes a client and its secrets from the clients file. Tokens already issued to it
stay valid until they expire, unless --revoke revokes them first (through the admin API
of a running gateway, as "portaria revoke --client <id>" does; if that fails, the client
is kept). Without --revoke, a warning says so; "portaria revoke --client <id> --force"
revokes them later.

Options:
  --revoke             revoke every token of the client, then remove it
${ADMIN_HELP}
${FILE_HELP}
`);

export async function runClientsCommand(args: readonly string[], ctx: CliContext): Promise<void> {
  const [command, ...rest] = args;
  if (command === undefined) throw new UsageError('clients', 'missing command');
  if (command === '--help' || command === '-h') return ctx.out(CLIENTS_HELP);
  if (command === 'add') return add(rest, ctx);
  if (command === 'list') return list(rest, ctx);
  if (command === 'enable') return enable(rest, ctx);
  if (command === 'disable') return disable(rest, ctx);
  if (command === 'rotate-secret') return rotateSecret(rest, ctx);
  if (command === 'set-auth') return setAuth(rest, ctx);
  if (command === 'remove') return remove(rest, ctx);
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
    ...AUTH_OPTIONS,
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
  const file = await clientsFile(parsed, ctx);
  Object.assign(entry, await authFieldsOf(cmd, parsed, file, ctx));
  const keysOnly = entry.authMethods?.length === 1 && entry.authMethods[0] === 'private_key_jwt';
  if (keysOnly) {
    if (parsed.values['secret-stdin'] === true) {
      throw new UsageError(cmd, '--secret-stdin: a private_key_jwt client has no secret');
    }
    const lookalike = await addClient(file, entry);
    ctx.out(`Added client ${JSON.stringify(id)} (scopes: ${scopes.join(' ')}) to ${file}.\n`);
    noteLookalike(ctx, id, lookalike);
    ctx.out('It authenticates with private_key_jwt only: no secret was made.\n');
    return;
  }

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
    const lookalike = await addClient(file, entry);
    ctx.out(`Added client ${JSON.stringify(id)} (scopes: ${scopes.join(' ')}) to ${file}.\n`);
    noteLookalike(ctx, id, lookalike);
    ctx.out('The secret read from stdin is stored as a scrypt hash.\n');
    return;
  }

  const secret = generateSecret();
  entry.secrets.push({ hash: hashGeneratedSecret(secret) });
  const lookalike = await addClient(file, entry);
  ctx.out(`Added client ${JSON.stringify(id)} (scopes: ${scopes.join(' ')}) to ${file}.\n`);
  noteLookalike(ctx, id, lookalike);
  ctx.out(`client id:     ${id}\n`);
  ctx.out(`client secret: ${secret}\n`);
  ctx.out('Store the secret now: it cannot be shown again (only its hash is kept).\n');
}

async function list(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(LIST_HELP);
  const cmd = 'clients list';
  const parsed = parseCommandArgs(cmd, args, { ...FILE_OPTION, ...OUTPUT_OPTION });
  expectPositionals(cmd, parsed, []);
  const format = outputFormat(cmd, parsed);
  const file = await clientsFile(parsed, ctx);
  const clients = await listClients(file);
  if (format === 'json') {
    // Field names are documented (docs/cli.md): scripts read them.
    return ctx.out(
      jsonLines(
        clients.map((c) => ({
          id: c.id,
          scopes: c.scopes,
          lifetimeSeconds: c.lifetimeSeconds,
          disabled: c.disabled,
          secrets: c.secretCount,
          authMethods: c.authMethods,
        })),
      ),
    );
  }
  if (clients.length === 0) return ctx.out(`No clients in ${file}.\n`);
  ctx.out(
    table([
      ['ID', 'SCOPES', 'LIFETIME', 'DISABLED', 'SECRETS', 'AUTH'],
      ...clients.map((c) => [
        c.id,
        c.scopes.join(','),
        c.lifetimeSeconds === null ? 'default' : `${c.lifetimeSeconds}s`,
        c.disabled ? 'yes' : 'no',
        String(c.secretCount),
        c.authMethods.map((m) => AUTH_SHORT[m] ?? m).join(','),
      ]),
    ]),
  );
  const ids = clients.map((c) => c.id);
  const noted = new Set<string>();
  for (const id of ids) {
    const alike = lookalikesOf(ids, id);
    if (alike.length === 0 || noted.has(id)) continue;
    for (const other of alike) noted.add(other);
    ctx.out(
      `Note: ${[id, ...alike].map(escapedId).join(', ')} look alike but are different clients (ids are compared byte for byte).\n`,
    );
  }
}

async function disable(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(DISABLE_HELP);
  const cmd = 'clients disable';
  const parsed = parseCommandArgs(cmd, args, FILE_OPTION);
  const [id] = expectPositionals(cmd, parsed, ['id']) as [string];
  const file = await clientsFile(parsed, ctx);
  const changed = await disableClient(file, id);
  ctx.out(
    changed
      ? `Disabled client ${JSON.stringify(id)} in ${file} (a running gateway picks it up on reload).\n`
      : `Client ${JSON.stringify(id)} was already disabled.\n`,
  );
}

async function enable(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(ENABLE_HELP);
  const cmd = 'clients enable';
  const parsed = parseCommandArgs(cmd, args, FILE_OPTION);
  const [id] = expectPositionals(cmd, parsed, ['id']) as [string];
  const file = await clientsFile(parsed, ctx);
  const changed = await enableClient(file, id);
  ctx.out(
    changed
      ? `Enabled client ${JSON.stringify(id)} in ${file} (a running gateway picks it up on reload).\n`
      : `Client ${JSON.stringify(id)} was not disabled.\n`,
  );
}

async function rotateSecret(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(ROTATE_HELP);
  const cmd = 'clients rotate-secret';
  const parsed = parseCommandArgs(cmd, args, {
    ...FILE_OPTION,
    overlap: { type: 'string' },
    now: { type: 'string' }, // hidden: the moment of the rotation (tests)
  });
  const [id] = expectPositionals(cmd, parsed, ['id']) as [string];
  const overlapText = stringValue(parsed, 'overlap') ?? DEFAULT_OVERLAP;
  const overlapSeconds = parseDuration(overlapText);
  if (overlapSeconds === null) {
    throw new UsageError(
      cmd,
      `--overlap: ${JSON.stringify(overlapText)} is not a duration (30m, 24h, 7d or seconds, at most 365d)`,
    );
  }
  const nowText = stringValue(parsed, 'now');
  const nowMs = nowText === undefined ? ctx.now().getTime() : Date.parse(nowText);
  if (!Number.isFinite(nowMs)) throw new UsageError(cmd, '--now: not a date-time');
  const file = await clientsFile(parsed, ctx);

  const secret = generateSecret();
  const result = await rotateClientSecret(file, id, {
    hash: hashGeneratedSecret(secret),
    nowMs,
    overlapMs: overlapSeconds * 1000,
  });
  ctx.out(`Rotated the secret of client ${JSON.stringify(id)} in ${file}.\n`);
  ctx.out(`client id:     ${id}\n`);
  ctx.out(`client secret: ${secret}\n`);
  ctx.out('Store the secret now: it cannot be shown again (only its hash is kept).\n');
  const [until] = result.kept;
  ctx.out(
    until === undefined
      ? 'The previous secret no longer works.\n'
      : `The previous secret works until ${until}.\n`,
  );
}

async function setAuth(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(SET_AUTH_HELP);
  const cmd = 'clients set-auth';
  const parsed = parseCommandArgs(cmd, args, {
    ...FILE_OPTION,
    ...AUTH_OPTIONS,
    'clear-audiences': { type: 'boolean' },
    'clear-permissions': { type: 'boolean' },
  });
  const [id] = expectPositionals(cmd, parsed, ['id']) as [string];
  const file = await clientsFile(parsed, ctx);
  const fields = await authFieldsOf(cmd, parsed, file, ctx);
  const clear = (flag: string, key: 'audiences' | 'permissions') => {
    if (parsed.values[flag] !== true) return undefined;
    if (fields[key] !== undefined)
      throw new UsageError(cmd, `--${flag} goes without --${key.slice(0, -1)}`);
    return null;
  };
  const change = {
    ...fields,
    ...(clear('clear-audiences', 'audiences') === null ? { audiences: null } : {}),
    ...(clear('clear-permissions', 'permissions') === null ? { permissions: null } : {}),
  };
  if (Object.keys(change).length === 0) throw new UsageError(cmd, 'nothing to change (see --help)');
  const entry = await setClientAuth(file, id, change);
  const methods = entry.authMethods ?? ['client_secret_basic', 'client_secret_post'];
  ctx.out(
    `Changed client ${JSON.stringify(id)} in ${file}: authenticates with ${methods.join(', ')}`,
  );
  const keys = entry.jwksFile ?? entry.jwksUri;
  ctx.out(keys === undefined ? '.\n' : `, keys from ${keys} (${entry.assertionAlg ?? 'ES256'}).\n`);
}

async function remove(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(REMOVE_HELP);
  const cmd = 'clients remove';
  const parsed = parseCommandArgs(cmd, args, {
    ...FILE_OPTION,
    ...ADMIN_OPTIONS,
    revoke: { type: 'boolean' },
  });
  const [id] = expectPositionals(cmd, parsed, ['id']) as [string];
  const revoke = parsed.values.revoke === true;
  if (!revoke && (parsed.values['admin-url'] ?? parsed.values['token-file']) !== undefined) {
    throw new UsageError(cmd, '--admin-url and --token-file go with --revoke only');
  }
  const config = await gatewayConfig(parsed, ctx);
  const file = clientsFileFor(parsed, ctx, config);
  if (revoke) {
    // Revoked first: if the gateway cannot be reached, the client stays, so that
    // running the command again revokes and removes it.
    if (!(await listClients(file)).some((c) => c.id === id)) {
      throw new Error(`no client ${JSON.stringify(id)} in ${file}`);
    }
    ctx.out(await revokeClientTokens(cmd, parsed, ctx, config, id));
  }
  await removeClient(file, id);
  ctx.out(`Removed client ${JSON.stringify(id)} from ${file}.\n`);
  if (!revoke) {
    ctx.err(
      `warning: tokens already issued to ${JSON.stringify(id)} stay valid until they expire; revoke them with "portaria revoke --client ${shellWord(id)} --force" (or remove with --revoke).\n`,
    );
  }
}

/** `id` as one shell word: as is when plain, else in single quotes. */
function shellWord(id: string): string {
  return /^[A-Za-z0-9._:@%+=,/-]+$/.test(id) ? id : `'${id.replaceAll("'", "'\\''")}'`;
}

/** Ids are never normalised: say so when the new one differs from another only in spelling. */
function noteLookalike(ctx: CliContext, id: string, lookalike: string | undefined): void {
  if (lookalike === undefined) return;
  ctx.out(
    `Note: the existing client ${JSON.stringify(lookalike)} is the same name in another Unicode spelling (${escapedId(lookalike)}, this one ${escapedId(id)}); ids are compared byte for byte, so these are two clients.\n`,
  );
}

/** `30m`, `24h`, `7d`, `90s` or plain seconds → seconds; null when invalid or over 365 days. */
function parseDuration(text: string): number | null {
  const m = /^([0-9]{1,9})([smhd]?)$/.exec(text);
  if (!m) return null;
  const seconds = Number(m[1]) * (UNIT_SECONDS[m[2] ?? ''] ?? 1);
  return seconds <= MAX_OVERLAP_SECONDS ? seconds : null;
}

async function clientsFile(parsed: ParsedCommand, ctx: CliContext): Promise<string> {
  const explicit = stringValue(parsed, 'clients-file');
  if (explicit !== undefined) return explicit;
  return clientsFileFor(parsed, ctx, await gatewayConfig(parsed, ctx));
}

/** Drops the one line ending `echo` or a here-string adds. */
function stripNewline(text: string): string {
  return text.replace(/\r?\n$/, '');
}
