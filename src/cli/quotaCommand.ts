/**
 * `portaria quota show SUBJECT [-o json]` and `portaria quota reset SUBJECT`: a partner's
 * quota counters through the admin API of a running gateway (`/admin/v1/quotas/{subject}`,
 * docs/quotas.md). SUBJECT is what the policies key by: the client id, or the value of the
 * policy's claim. The admin token is read as `portaria revoke` reads it, never printed.
 * Exit codes (see main.ts): 0 done, 1 refused by the API or the gateway unreachable, 2
 * usage error.
 */
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
import { CONFIG_HELP, CONFIG_OPTION, gatewayConfig } from './gatewayConfig.js';
import { alignHelp } from './helpText.js';
import { ADMIN_HELP, ADMIN_OPTIONS, adminTarget, call, refusal } from './revokeCommand.js';
import { table } from './table.js';

export const QUOTA_HELP = alignHelp(`Usage: portaria quota show SUBJECT [-o json]
       portaria quota reset SUBJECT

Reads or resets a partner's quota counters through the admin API of a running gateway.
SUBJECT is what the policies count by: the client id, or the value of a policy's claim.
"show" lists the counters in use (a full bucket or an unused window is not listed);
"reset" forgets every counter of the subject: its next request starts afresh.

Options:
${OUTPUT_HELP}
${ADMIN_HELP}
${CONFIG_HELP}
`);

interface Counter {
  readonly policy: string;
  readonly route: string | null;
  readonly rate: { limit: number; remaining: number; resetSeconds: number } | null;
  readonly quota: { limit: number; remaining: number; resetSeconds: number } | null;
}

export async function runQuotaCommand(args: readonly string[], ctx: CliContext): Promise<void> {
  const sub = args[0];
  if (sub === undefined || wantsHelp(args.slice(0, 1))) return ctx.out(QUOTA_HELP);
  if (sub !== 'show' && sub !== 'reset') throw unknownCommand('quota', sub, ['show', 'reset']);
  const cmd = `quota ${sub}`;
  if (wantsHelp(args.slice(1))) return ctx.out(QUOTA_HELP);
  const parsed = parseCommandArgs(cmd, args.slice(1), {
    ...(sub === 'show' ? OUTPUT_OPTION : {}),
    ...ADMIN_OPTIONS,
    ...CONFIG_OPTION,
  });
  expectPositionals(cmd, parsed, ['SUBJECT']);
  const subject = parsed.positionals[0] as string;
  if (!/^[\x21-\x7E]{1,256}$/.test(subject)) {
    throw new UsageError(cmd, 'SUBJECT: 1 to 256 visible ASCII characters');
  }
  const format = sub === 'show' ? outputFormat(cmd, parsed) : 'table';
  const config = await gatewayConfig(parsed, ctx);
  const target = await adminTarget(
    cmd,
    parsed,
    ctx,
    config,
    `/admin/v1/quotas/${encodeURIComponent(subject)}`,
  );
  const res = await call(target, { method: sub === 'show' ? 'GET' : 'DELETE' });
  const text = await res.text().catch(() => '');
  if (res.status !== 200) throw new Error(refusal(res.status, text));
  if (sub === 'reset') {
    const { reset } = JSON.parse(text) as { reset: number };
    return ctx.out(`Reset ${reset} quota counter(s) of ${subject}.\n`);
  }
  const { counters } = JSON.parse(text) as { counters: Counter[] };
  if (format === 'json') return ctx.out(jsonLines(counters));
  if (counters.length === 0) return ctx.out(`No quota counter of ${subject} in use.\n`);
  const rows: string[][] = [];
  for (const c of counters) {
    const route = c.route ?? '*';
    if (c.rate !== null) {
      rows.push([
        c.policy,
        route,
        'rate',
        `${c.rate.remaining}/${c.rate.limit}`,
        `${c.rate.resetSeconds}s`,
      ]);
    }
    if (c.quota !== null) {
      rows.push([
        c.policy,
        route,
        'quota',
        `${c.quota.remaining}/${c.quota.limit}`,
        `${c.quota.resetSeconds}s`,
      ]);
    }
  }
  ctx.out(table([['POLICY', 'ROUTE', 'PART', 'REMAINING', 'RESET'], ...rows]));
}
