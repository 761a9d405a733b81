/**
 * `portaria revoke --jti ID | --client ID [--before TIME] [--expires-at SECONDS]`: calls
 * the admin API of a running gateway (`POST /admin/v1/revocations`) and prints what was
 * revoked. The revocation is in force, and durable, once this prints it. `--client` names
 * a client of the clients file (a typo must not pass for a revocation); `--force` revokes
 * a client no longer in it, whose tokens may still be live. `portaria revoke list` shows
 * the entries the gateway holds (`GET`).
 *
 * The admin token is read from `--token-file` / $PORTARIA_ADMIN_TOKEN_FILE (surrounding
 * whitespace trimmed) and sent only in the Authorization header; it is never printed.
 * Exit codes (see main.ts): 0 revoked, 1 refused by the API (its `detalhe` is shown) or
 * the gateway unreachable, 2 usage error.
 */
import { readFile } from 'node:fs/promises';
import { listClients } from '../clients/clientsFile.js';
import { escapedId, lookalikesOf } from '../clients/lookalikeIds.js';
import { environmentText } from '../config/environment.js';
import type { Config } from '../config/types.js';
import { clientIdProblem } from '../domain/clientId.js';
import { likelyMeant } from '../lib/nearestName.js';
import {
  type CliContext,
  envValue,
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
  unknownCommand,
  wantsHelp,
} from './args.js';
import {
  adminUrlOf,
  CONFIG_HELP,
  CONFIG_OPTION,
  clientsFileFor,
  gatewayConfig,
} from './gatewayConfig.js';
import { alignHelp } from './helpText.js';
import { table } from './table.js';

export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:9091';
const CMD = 'revoke';
const TIMEOUT_MS = 10_000;
/** The shape of an RFC 3339 date-time; the gateway checks the rest. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const SECONDS = /^[0-9]{1,15}$/;
/** What a token may hold: visible ASCII (it goes into an HTTP header). */
const TOKEN = /^[\x21-\x7E]+$/;

/** The admin listener options every command calling the admin API takes. */
export const ADMIN_OPTIONS: OptionsConfig = {
  'admin-url': { type: 'string' },
  'token-file': { type: 'string' },
};

export const ADMIN_HELP = `  --admin-url URL      the gateway's admin listener (default: the configuration's
                       admin.host and admin.port, else $PORTARIA_ADMIN_URL, else
                       ${DEFAULT_ADMIN_URL})
  --token-file PATH    file holding the admin token (default: the configuration's
                       admin.tokenFile, else $PORTARIA_ADMIN__TOKEN_FILE)`;

export const REVOKE_HELP = alignHelp(`Usage: portaria revoke --jti ID [--expires-at SECONDS]
       portaria revoke --client ID [--before TIME] [--force]
       portaria revoke list [-o json]

Revokes access tokens through the admin API of a running gateway: one token by its
"jti", or every token of a client issued at or before a moment. Revoked tokens are
refused at once; the entry is forgotten when the tokens it covers have expired.
"portaria revoke list" shows the entries the gateway holds.

Options:
  --jti ID               revoke the token with this "jti" claim
  --expires-at SECONDS   that token's "exp" (epoch seconds), so the entry can be
                         forgotten sooner (default: the longest token lifetime)
  --client ID            revoke every token of this client issued at or before --before
                         (any Unicode id, matched byte for byte: no normalisation); the
                         client must be in the clients file
  --before TIME          cut-off: RFC 3339 date-time (2026-01-01T12:00:00Z) or epoch
                         seconds (default: now plus the gateway's clock skew, so a
                         token stamped by a clock running ahead is covered too)
  --force                revoke a --client the clients file does not hold (a client
                         already removed: its tokens stay valid until they expire)
  --clients-file PATH    the clients file --client is checked against (default: the
                         configuration's clients.file, else $PORTARIA_CLIENTS__FILE,
                         else ./data/clients.json)
${ADMIN_HELP}
${CONFIG_HELP}
`);

const LIST_HELP = alignHelp(`Usage: portaria revoke list [-o json]

Shows the revocation entries a running gateway holds (admin API, GET), tokens first:
kind (token or client), the jti or client id, the client cut-off (tokens issued at or
before it are refused) and when the entry expires (UTC).

Options:
${OUTPUT_HELP}
${ADMIN_HELP}
${CONFIG_HELP}
`);

export async function runRevokeCommand(args: readonly string[], ctx: CliContext): Promise<void> {
  if (args[0] === 'list') return list(args.slice(1), ctx);
  if (wantsHelp(args)) return ctx.out(REVOKE_HELP);
  // `revoke` takes options, and one command: a misspelt `list` is named as such.
  const first = args[0];
  if (first !== undefined && !first.startsWith('-') && likelyMeant(first, ['list']) !== null) {
    throw unknownCommand(CMD, first, ['list']);
  }
  const parsed = parseCommandArgs(CMD, args, {
    jti: { type: 'string' },
    'expires-at': { type: 'string' },
    client: { type: 'string' },
    before: { type: 'string' },
    force: { type: 'boolean' },
    'clients-file': { type: 'string' },
    ...ADMIN_OPTIONS,
    ...CONFIG_OPTION,
  });
  expectPositionals(CMD, parsed, []);
  const body = requestBody(
    stringValue(parsed, 'jti'),
    stringValue(parsed, 'expires-at'),
    stringValue(parsed, 'client'),
    stringValue(parsed, 'before'),
  );
  if (parsed.values.force === true && body.clientId === undefined) {
    throw new UsageError(CMD, '--force goes with --client only');
  }
  const config = await gatewayConfig(parsed, ctx);
  const target = await adminTarget(CMD, parsed, ctx, config);
  if (typeof body.clientId === 'string' && parsed.values.force !== true) {
    await expectClient(body.clientId, clientsFileFor(parsed, ctx, config));
  }
  ctx.out(describe(await post(target, body)));
}

/**
 * Revokes every token of `clientId` issued up to now (plus the gateway's skew), as
 * `revoke --client` does; returns the line describing it.
 */
export async function revokeClientTokens(
  command: string,
  parsed: ParsedCommand,
  ctx: CliContext,
  config: Config | null,
  clientId: string,
): Promise<string> {
  const target = await adminTarget(command, parsed, ctx, config);
  return describe(await post(target, { clientId }));
}

export interface AdminTarget {
  readonly endpoint: string;
  readonly token: string;
}

/**
 * An admin API URL (`path`, the revocations endpoint by default) and the admin token, from
 * the options, configuration or environment.
 */
export async function adminTarget(
  command: string,
  parsed: ParsedCommand,
  ctx: CliContext,
  config: Config | null,
  path = '/admin/v1/revocations',
): Promise<AdminTarget> {
  const endpoint = adminEndpoint(
    command,
    path,
    stringValue(parsed, 'admin-url') ??
      (config === null ? undefined : adminUrlOf(config)) ??
      envValue(ctx, 'PORTARIA_ADMIN_URL') ??
      DEFAULT_ADMIN_URL,
  );
  const tokenFile =
    stringValue(parsed, 'token-file') ??
    (config === null ? environmentText(ctx.env, 'admin.tokenFile') : config.admin.tokenFile);
  if (tokenFile === undefined || tokenFile === null) {
    throw new UsageError(
      command,
      config === null
        ? 'missing --token-file (or $PORTARIA_ADMIN__TOKEN_FILE, $PORTARIA_ADMIN_TOKEN_FILE)'
        : "missing --token-file: the configuration has no admin.tokenFile (the gateway's admin API is off)",
    );
  }
  return { endpoint, token: await readToken(tokenFile) };
}

export async function call(target: AdminTarget, init: RequestInit): Promise<Response> {
  try {
    return await fetch(target.endpoint, {
      ...init,
      headers: { authorization: `Bearer ${target.token}`, ...init.headers },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err) {
    throw new Error(`cannot reach the admin API at ${target.endpoint}: ${networkReason(err)}`);
  }
}

async function post(target: AdminTarget, body: Record<string, string | number>): Promise<string> {
  const res = await call(target, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text().catch(() => '');
  if (res.status !== 201) throw new Error(refusal(res.status, text));
  return text;
}

/** A client id the clients file does not hold is refused: a typo must not look like a revocation. */
async function expectClient(clientId: string, file: string): Promise<void> {
  let ids: string[];
  try {
    ids = (await listClients(file)).map((c) => c.id);
  } catch (err) {
    throw new Error(
      `cannot check that client ${JSON.stringify(clientId)} exists: ${(err as Error).message}; give --clients-file or --config, or --force to revoke it unchecked`,
    );
  }
  if (ids.includes(clientId)) return;
  const alike = lookalikesOf([...ids, clientId], clientId);
  const hint =
    alike.length > 0
      ? ` (${alike.map(escapedId).join(', ')} differs from ${escapedId(clientId)} only in Unicode spelling)`
      : '';
  throw new Error(
    `no client ${JSON.stringify(clientId)} in ${file}${hint}; a client already removed from the file may still hold live tokens: revoke them with --force`,
  );
}

/** One revocation entry as `revoke list -o json` prints it (docs/cli.md). */
interface ListedEntry {
  readonly kind: 'token' | 'client';
  readonly jti: string | null;
  readonly clientId: string | null;
  readonly issuedBefore: string | null;
  readonly expiresAt: string;
}

async function list(args: readonly string[], ctx: CliContext): Promise<void> {
  const cmd = 'revoke list';
  if (wantsHelp(args)) return ctx.out(LIST_HELP);
  const parsed = parseCommandArgs(cmd, args, {
    ...OUTPUT_OPTION,
    ...ADMIN_OPTIONS,
    ...CONFIG_OPTION,
  });
  expectPositionals(cmd, parsed, []);
  const format = outputFormat(cmd, parsed);
  const config = await gatewayConfig(parsed, ctx);
  const target = await adminTarget(cmd, parsed, ctx, config);
  const res = await call(target, { method: 'GET' });
  const text = await res.text().catch(() => '');
  if (res.status !== 200) throw new Error(refusal(res.status, text));
  const listing = JSON.parse(text) as {
    tokens: { jti: string; expiresAt: number }[];
    clients: { clientId: string; issuedBefore: number; expiresAt: number }[];
  };
  const entries: ListedEntry[] = [
    ...listing.tokens.map((t) => ({
      kind: 'token' as const,
      jti: t.jti,
      clientId: null,
      issuedBefore: null,
      expiresAt: isoOf(t.expiresAt),
    })),
    ...listing.clients.map((c) => ({
      kind: 'client' as const,
      jti: null,
      clientId: c.clientId,
      issuedBefore: isoOf(c.issuedBefore),
      expiresAt: isoOf(c.expiresAt),
    })),
  ];
  if (format === 'json') return ctx.out(jsonLines(entries));
  if (entries.length === 0) return ctx.out('No revocation entries.\n');
  ctx.out(
    table([
      ['KIND', 'ID', 'ISSUED-BEFORE', 'EXPIRES'],
      ...entries.map((e) => [
        e.kind,
        e.jti ?? e.clientId ?? '',
        e.issuedBefore ?? '-',
        e.expiresAt,
      ]),
    ]),
  );
}

function requestBody(
  jti: string | undefined,
  expiresAt: string | undefined,
  client: string | undefined,
  before: string | undefined,
): Record<string, string | number> {
  if (jti !== undefined && client !== undefined) {
    throw new UsageError(CMD, 'give either --jti or --client, not both');
  }
  if (jti === undefined && client === undefined)
    throw new UsageError(CMD, 'missing --jti or --client');
  if (jti !== undefined) {
    if (before !== undefined) throw new UsageError(CMD, '--before goes with --client only');
    if (jti === '') throw new UsageError(CMD, '--jti: must not be empty');
    if (expiresAt === undefined) return { jti };
    if (!SECONDS.test(expiresAt)) throw new UsageError(CMD, '--expires-at: not epoch seconds');
    return { jti, expiresAt: Number(expiresAt) };
  }
  if (expiresAt !== undefined) throw new UsageError(CMD, '--expires-at goes with --jti only');
  if (client === '' || client === undefined)
    throw new UsageError(CMD, '--client: must not be empty');
  const problem = clientIdProblem(client);
  if (problem) throw new UsageError(CMD, `--client: a client id ${problem}`);
  if (before === undefined) return { clientId: client };
  if (SECONDS.test(before)) return { clientId: client, issuedBefore: Number(before) };
  if (RFC3339.test(before)) return { clientId: client, issuedBefore: before };
  throw new UsageError(CMD, '--before: not an RFC 3339 date-time or epoch seconds');
}

function adminEndpoint(command: string, path: string, base: string): string {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new UsageError(command, '--admin-url: not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(command, '--admin-url: must be an http or https URL');
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new UsageError(command, '--admin-url: must not carry credentials, a query or a fragment');
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}${path}`;
}

async function readToken(file: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new Error(`cannot read the admin token file ${file} (${code})`);
  }
  const token = text.trim();
  // Never echo the content: it is a secret even when malformed.
  if (token === '') throw new Error(`the admin token file ${file} is empty`);
  if (!TOKEN.test(token)) {
    throw new Error(`the admin token file ${file} holds characters a token may not contain`);
  }
  return token;
}

function networkReason(err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError')
    return `no answer in ${TIMEOUT_MS / 1000} s`;
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return err instanceof Error ? err.message : String(err);
}

/** The problem's `detalhe` and status, or just the status when the body is not a problem. */
export function refusal(status: number, text: string): string {
  let detail: unknown;
  try {
    detail = (JSON.parse(text) as { detalhe?: unknown }).detalhe;
  } catch {
    detail = undefined;
  }
  return typeof detail === 'string'
    ? `${detail} (HTTP ${status})`
    : `the admin API answered HTTP ${status}`;
}

function describe(text: string): string {
  const r = JSON.parse(text) as {
    kind?: unknown;
    jti?: unknown;
    clientId?: unknown;
    issuedBefore?: unknown;
    expiresAt?: unknown;
  };
  const until = `entry kept until ${isoOf(r.expiresAt)}`;
  if (r.kind === 'client') {
    return `Revoked every token of client ${JSON.stringify(r.clientId)} issued at or before ${isoOf(r.issuedBefore)} (${until}).\n`;
  }
  return `Revoked token ${JSON.stringify(r.jti)} (${until}).\n`;
}

function isoOf(seconds: unknown): string {
  return typeof seconds === 'number' && Number.isFinite(seconds)
    ? new Date(seconds * 1000).toISOString().replace('.000Z', 'Z')
    : String(seconds);
}
