/**
 * `portaria clients add`: registers a client. A generated secret (256 random bits) is
 * printed once and stored as a `sha256:` hash; one chosen by the operator
 * (`--secret-stdin`) is stored as `scrypt:`; a `private_key_jwt`-only client gets none.
 * The id, scopes and lifetime are checked with the registry's own rules, so the CLI
 * cannot write a file the gateway would refuse.
 */
import { lifetimeProblem, scopesProblems } from '../clients/clientRegistry.js';
import { addClient, type ClientsFileEntry } from '../clients/clientsFile.js';
import { escapedId } from '../clients/lookalikeIds.js';
import { SECRET_METHODS } from '../clients/oauthClientFields.js';
import { generateSecret, hashChosenSecret, hashGeneratedSecret } from '../clients/secretHash.js';
import { CLIENT_ID_RULE, clientIdProblem } from '../domain/clientId.js';
import {
  type CliContext,
  expectPositionals,
  parseCommandArgs,
  stringValue,
  UsageError,
  wantsHelp,
} from './args.js';
import { AUTH_HELP, AUTH_OPTIONS, authFieldsOf } from './clientAuthOptions.js';
import { clientsFile, FILE_HELP, FILE_OPTION } from './clientsFileOption.js';
import { alignHelp } from './helpText.js';

const MIN_CHOSEN_SECRET = 16;
const MAX_CHOSEN_SECRET = 1024;

const ADD_HELP =
  alignHelp(`Usage: portaria clients add <id> --scopes SCOPE[,SCOPE…] [--lifetime SECONDS] [--secret-stdin]
       portaria clients add <id> --scopes … --auth private_key_jwt --jwks FILE | --jwks-uri URL [--alg ES256]
       portaria clients add <id> --scopes … --auth tls_client_auth --tls-subject-dn DN | --tls-san-dns NAME | …
       portaria clients add <id> --scopes … --auth self_signed_tls_client_auth --jwks FILE

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

export async function runClientsAdd(args: readonly string[], ctx: CliContext): Promise<void> {
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
  // Keys or a certificate only (private_key_jwt, RFC 8705's methods): no secret.
  const methods = entry.authMethods;
  const keysOnly =
    methods !== undefined &&
    !methods.some((m) => (SECRET_METHODS as readonly string[]).includes(m));
  if (keysOnly) {
    if (parsed.values['secret-stdin'] === true) {
      throw new UsageError(cmd, `--secret-stdin: a ${methods.join(', ')} client has no secret`);
    }
    const lookalike = await addClient(file, entry);
    ctx.out(`Added client ${JSON.stringify(id)} (scopes: ${scopes.join(' ')}) to ${file}.\n`);
    noteLookalike(ctx, id, lookalike);
    ctx.out(`It authenticates with ${methods.join(', ')} only: no secret was made.\n`);
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

/** Ids are never normalised: say so when the new one differs from another only in spelling. */
function noteLookalike(ctx: CliContext, id: string, lookalike: string | undefined): void {
  if (lookalike === undefined) return;
  ctx.out(
    `Note: the existing client ${JSON.stringify(lookalike)} is the same name in another Unicode spelling (${escapedId(lookalike)}, this one ${escapedId(id)}); ids are compared byte for byte, so these are two clients.\n`,
  );
}

/** Drops the one line ending `echo` or a here-string adds. */
function stripNewline(text: string): string {
  return text.replace(/\r?\n$/, '');
}
