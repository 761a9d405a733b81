/**
 * `portaria clients add|list|enable|disable|rotate-secret|set-auth|remove`: edits the clients file the
 * gateway loads at start (and reloads on change or SIGHUP when reload is enabled). This
 * file dispatches and holds the commands that only list or flip a client; `add`,
 * `rotate-secret` and `set-auth` have their own files. Nothing ever prints a stored hash.
 */
import { disableClient, enableClient, listClients, removeClient } from '../clients/clientsFile.js';
import { escapedId, lookalikesOf } from '../clients/lookalikeIds.js';
import {
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
import { runClientsAdd } from './clientsAddCommand.js';
import { runClientsSetAuth } from './clientsAuthCommand.js';
import { clientsFile, FILE_HELP, FILE_OPTION } from './clientsFileOption.js';
import { runClientsRotateSecret } from './clientsRotateSecretCommand.js';
import { clientsFileFor, gatewayConfig } from './gatewayConfig.js';
import { alignHelp } from './helpText.js';
import { ADMIN_HELP, ADMIN_OPTIONS, revokeClientTokens } from './revokeCommand.js';
import { table } from './table.js';

/** `clients list`'s AUTH column: short names of the methods. */
const AUTH_SHORT: Readonly<Record<string, string>> = {
  client_secret_basic: 'basic',
  client_secret_post: 'post',
  private_key_jwt: 'jwt',
  tls_client_auth: 'tls',
  self_signed_tls_client_auth: 'self-signed',
};

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
  if (command === 'add') return runClientsAdd(rest, ctx);
  if (command === 'list') return list(rest, ctx);
  if (command === 'enable') return enable(rest, ctx);
  if (command === 'disable') return disable(rest, ctx);
  if (command === 'rotate-secret') return runClientsRotateSecret(rest, ctx);
  if (command === 'set-auth') return runClientsSetAuth(rest, ctx);
  if (command === 'remove') return remove(rest, ctx);
  throw unknownCommand('clients', command, [
    'add',
    'list',
    'enable',
    'disable',
    'rotate-secret',
    'set-auth',
    'remove',
  ]);
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
