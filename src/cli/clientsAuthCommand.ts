/**
 * `portaria clients set-auth`: changes how a client authenticates at the OAuth 2.0
 * endpoints (its methods, keys, algorithm), its audiences and permissions. Each option
 * given replaces that field; the others are kept.
 */
import { setClientAuth } from '../clients/clientsFile.js';
import { SECRET_METHODS } from '../clients/oauthClientFields.js';
import {
  type CliContext,
  expectPositionals,
  parseCommandArgs,
  UsageError,
  wantsHelp,
} from './args.js';
import { AUTH_HELP, AUTH_OPTIONS, authFieldsOf } from './clientAuthOptions.js';
import { clientsFile, FILE_HELP, FILE_OPTION } from './clientsFileOption.js';
import { alignHelp } from './helpText.js';

const SET_AUTH_HELP =
  alignHelp(`Usage: portaria clients set-auth <id> [--auth METHODS] [--jwks FILE | --jwks-uri URL] [--alg ALG] [--audience AUD]… [--permission P]…

Changes how a client authenticates at every token endpoint (docs/oauth.md). Each
option given replaces that field; the others are kept. --clear-audiences and
--clear-permissions return to the defaults. Methods without a secret one
(--auth private_key_jwt) remove the client's secrets, unless --keep-secrets; kept,
they are refused everywhere, the contract's JSON operation included.

Options:
${AUTH_HELP}
  --clear-audiences    back to the gateway's audience only
  --clear-permissions  no permissions
  --keep-secrets       keep the secrets of a client moved to private_key_jwt only
${FILE_HELP}
`);

export async function runClientsSetAuth(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(SET_AUTH_HELP);
  const cmd = 'clients set-auth';
  const parsed = parseCommandArgs(cmd, args, {
    ...FILE_OPTION,
    ...AUTH_OPTIONS,
    'clear-audiences': { type: 'boolean' },
    'clear-permissions': { type: 'boolean' },
    'keep-secrets': { type: 'boolean' },
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
  const keepSecrets = parsed.values['keep-secrets'] === true;
  const { entry, droppedSecrets } = await setClientAuth(file, id, change, { keepSecrets });
  const methods = entry.authMethods ?? SECRET_METHODS;
  ctx.out(
    `Changed client ${JSON.stringify(id)} in ${file}: authenticates with ${methods.join(', ')}`,
  );
  const keys = entry.jwksFile ?? entry.jwksUri;
  ctx.out(keys === undefined ? '.\n' : `, keys from ${keys} (${entry.assertionAlg ?? 'ES256'}).\n`);
  if (droppedSecrets > 0) {
    ctx.out(
      `Removed its ${droppedSecrets === 1 ? 'secret' : `${droppedSecrets} secrets`}: no token endpoint accepts them any more.\n`,
    );
  } else if (
    entry.secrets.length > 0 &&
    !methods.some((m) => (SECRET_METHODS as readonly string[]).includes(m))
  ) {
    ctx.out('Kept its secrets (--keep-secrets): every token endpoint refuses them.\n');
  }
}
