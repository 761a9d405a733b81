/**
 * `portaria revoke --jti ID | --client ID [--before TIME] [--expires-at SECONDS]`: calls
 * the admin API of a running gateway (`POST /admin/v1/revocations`) and prints what was
 * revoked. The revocation is in force, and durable, once this prints it.
 *
 * The admin token is read from `--token-file` / $PORTARIA_ADMIN_TOKEN_FILE (surrounding
 * whitespace trimmed) and sent only in the Authorization header; it is never printed.
 * Exit codes (see main.ts): 0 revoked, 1 refused by the API (its `detalhe` is shown) or
 * the gateway unreachable, 2 usage error.
 */
import { readFile } from 'node:fs/promises';
import { clientIdProblem } from '../domain/clientId.js';
import {
  type CliContext,
  envValue,
  expectPositionals,
  parseCommandArgs,
  stringValue,
  UsageError,
  wantsHelp,
} from './args.js';
import { adminUrlOf, CONFIG_HELP, CONFIG_OPTION, gatewayConfig } from './gatewayConfig.js';

export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:9091';
const CMD = 'revoke';
const TIMEOUT_MS = 10_000;
/** The shape of an RFC 3339 date-time; the gateway checks the rest. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const SECONDS = /^[0-9]{1,15}$/;
/** What a token may hold: visible ASCII (it goes into an HTTP header). */
const TOKEN = /^[\x21-\x7E]+$/;

export const REVOKE_HELP = `Usage: portaria revoke --jti ID [--expires-at SECONDS]
       portaria revoke --client ID [--before TIME]

Revokes access tokens through the admin API of a running gateway: one token by its
"jti", or every token of a client issued at or before a moment. Revoked tokens are
refused at once; the entry is forgotten when the tokens it covers have expired.

Options:
  --jti ID               revoke the token with this "jti" claim
  --expires-at SECONDS   that token's "exp" (epoch seconds), so the entry can be
                         forgotten sooner (default: the longest token lifetime)
  --client ID            revoke every token of this client issued at or before --before
                         (any Unicode id, matched byte for byte: no normalisation)
  --before TIME          cut-off: RFC 3339 date-time (2026-01-01T12:00:00Z) or epoch
                         seconds (default: now plus the gateway's clock skew, so a
                         token stamped by a clock running ahead is covered too)
  --admin-url URL        the gateway's admin listener (default: the configuration's
                         admin.host and admin.port, else $PORTARIA_ADMIN_URL, else
                         ${DEFAULT_ADMIN_URL})
  --token-file PATH      file holding the admin token (default: the configuration's
                         admin.tokenFile, else $PORTARIA_ADMIN_TOKEN_FILE)
${CONFIG_HELP}
`;

export async function runRevokeCommand(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(REVOKE_HELP);
  const parsed = parseCommandArgs(CMD, args, {
    jti: { type: 'string' },
    'expires-at': { type: 'string' },
    client: { type: 'string' },
    before: { type: 'string' },
    'admin-url': { type: 'string' },
    'token-file': { type: 'string' },
    ...CONFIG_OPTION,
  });
  expectPositionals(CMD, parsed, []);
  const body = requestBody(
    stringValue(parsed, 'jti'),
    stringValue(parsed, 'expires-at'),
    stringValue(parsed, 'client'),
    stringValue(parsed, 'before'),
  );
  const config = await gatewayConfig(parsed, ctx);
  const endpoint = adminEndpoint(
    stringValue(parsed, 'admin-url') ??
      (config === null ? undefined : adminUrlOf(config)) ??
      envValue(ctx, 'PORTARIA_ADMIN_URL') ??
      DEFAULT_ADMIN_URL,
  );
  const tokenFile =
    stringValue(parsed, 'token-file') ??
    (config === null ? envValue(ctx, 'PORTARIA_ADMIN_TOKEN_FILE') : config.admin.tokenFile);
  if (tokenFile === undefined || tokenFile === null) {
    throw new UsageError(
      CMD,
      config === null
        ? 'missing --token-file (or $PORTARIA_ADMIN_TOKEN_FILE)'
        : "missing --token-file: the configuration has no admin.tokenFile (the gateway's admin API is off)",
    );
  }
  const token = await readToken(tokenFile);

  let res: Response;
  try {
    res = await fetch(endpoint, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err) {
    throw new Error(`cannot reach the admin API at ${endpoint}: ${networkReason(err)}`);
  }
  const text = await res.text().catch(() => '');
  if (res.status !== 201) throw new Error(refusal(res.status, text));
  ctx.out(describe(text));
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

function adminEndpoint(base: string): string {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new UsageError(CMD, '--admin-url: not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(CMD, '--admin-url: must be an http or https URL');
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new UsageError(CMD, '--admin-url: must not carry credentials, a query or a fragment');
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}/admin/v1/revocations`;
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
function refusal(status: number, text: string): string {
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
