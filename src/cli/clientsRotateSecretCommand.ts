/**
 * `portaria clients rotate-secret`: a new generated secret, printed once and stored as a
 * `sha256:` hash; the previous one stays valid for the overlap, so callers switch
 * without a failed request.
 */
import { rotateClientSecret } from '../clients/clientsFile.js';
import { generateSecret, hashGeneratedSecret } from '../clients/secretHash.js';
import {
  type CliContext,
  expectPositionals,
  parseCommandArgs,
  stringValue,
  UsageError,
  wantsHelp,
} from './args.js';
import { clientsFile, FILE_HELP, FILE_OPTION } from './clientsFileOption.js';
import { alignHelp } from './helpText.js';

const DEFAULT_OVERLAP = '24h';
const MAX_OVERLAP_SECONDS = 365 * 86_400;
const UNIT_SECONDS: Readonly<Record<string, number>> = { '': 1, s: 1, m: 60, h: 3600, d: 86_400 };

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

export async function runClientsRotateSecret(
  args: readonly string[],
  ctx: CliContext,
): Promise<void> {
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

/** `30m`, `24h`, `7d`, `90s` or plain seconds → seconds; null when invalid or over 365 days. */
function parseDuration(text: string): number | null {
  const m = /^([0-9]{1,9})([smhd]?)$/.exec(text);
  if (!m) return null;
  const seconds = Number(m[1]) * (UNIT_SECONDS[m[2] ?? ''] ?? 1);
  return seconds <= MAX_OVERLAP_SECONDS ? seconds : null;
}
