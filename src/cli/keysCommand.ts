/**
 * `portaria keys generate|rotate|list`: the signing keys in the keys directory.
 *
 * - `rotate` is the production path: it adds a key that is published now and signs
 *   only once every verifier's cached JWKS has it, and schedules the current key's
 *   retirement and removal (`src/keys/rotateKeys.ts`). Gateways pick the schedule up
 *   from the directory; the switch happens by the clock, on every replica alike.
 * - `generate` writes a key without a schedule entry: in a directory without a schedule
 *   it is active at once (the greatest kid signs, from the gateway's next load), with no
 *   publish-ahead, so third parties may see its tokens before its JWKS entry. In a
 *   directory where a scheduled key is active, it only verifies.
 * - `list` shows each key's state and schedule.
 */
import { type Config, SIGNING_ALGORITHMS, type SigningAlgorithm } from '../config/types.js';
import { generateSigningKey, writeSigningKey } from '../keys/generateKey.js';
import { KeyRing, type KeyState, type KeyStateName } from '../keys/keyRing.js';
import { formatInstant, parseInstant } from '../keys/keySchedule.js';
import { readKeyDirectory } from '../keys/loadKeyRing.js';
import { removeKey } from '../keys/removeKey.js';
import { rotateKeys } from '../keys/rotateKeys.js';
import {
  type CliContext,
  expectPositionals,
  jsonLines,
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
  CONFIG_HELP,
  CONFIG_OPTION,
  DEFAULT_KEYS_DIR,
  gatewayConfig,
  keysDirFor,
} from './gatewayConfig.js';
import { alignHelp } from './helpText.js';
import { table } from './table.js';

const DIR_HELP = `  --keys-dir PATH    keys directory (default: the configuration's keys.dir, else
                     $PORTARIA_KEYS__DIR, else ${DEFAULT_KEYS_DIR})
${CONFIG_HELP}`;

export const KEYS_HELP = alignHelp(`Usage: portaria keys <command> [options]

Manage the gateway's token-signing keys.

Commands:
  rotate [--to ES256|EdDSA|RS256|PS256]      add a key and schedule a zero-downtime switch to it
  list                                       show every key's state and schedule
  remove <kid>                               take a key out at once (compromised, or retired early)
  generate [--alg ES256|EdDSA|RS256|PS256]   create a key that is active at once (first key, tests)

Run "portaria keys <command> --help" for a command's options.
`);

const GENERATE_HELP = alignHelp(`Usage: portaria keys generate [--alg ES256|EdDSA|RS256|PS256]

Creates a private key (PKCS#8 PEM, mode 0600) named after its new kid, without a
schedule entry. In a directory without schedule.json the newest such key signs from the
gateway's next load, and is published no earlier: a verifier with a cached JWKS refuses
its tokens until it refetches. Use it for the first key; in production, change keys with
"portaria keys rotate". Where a scheduled key is active, the new key only verifies.

Options:
  --alg ALG          ES256 (P-256), EdDSA (Ed25519), RS256 (RSA 3072) or PS256
                     (RSASSA-PSS 3072); default: the configuration's token.algorithm,
                     else the algorithm of the keys already in the directory, ES256
                     when it has none
${DIR_HELP}
`);

const ROTATE_HELP =
  alignHelp(`Usage: portaria keys rotate [--alg ES256|EdDSA|RS256|PS256] [--to ES256|EdDSA|RS256|PS256] [--jwks-max-age SECONDS] [--skew SECONDS] [--max-lifetime SECONDS]

Adds a signing key and schedules the switch to it in schedule.json, so that no token
fails verification, at the gateway or at a verifier caching the JWKS:
  - the new key is published now and signs from now + jwks-max-age + skew;
  - the current key stops signing then, and leaves the JWKS max-lifetime + skew later,
    when every token it signed has expired.
Gateways follow the schedule by their clocks; they must load the changed directory
well within the skew. Refused while a rotation is pending. Use the gateway's settings:
keys.jwksMaxAgeSeconds, clockSkewSeconds and the longest token lifetime of any client
(with --config, the first two and the algorithm are read from its configuration).
With --to another algorithm, the new key takes over from the current one by the same
schedule, also on gateways whose token.algorithm is still the old one; set
token.algorithm to the new algorithm once it signs (before that, such a gateway
refuses to start: no key of it is active yet).

Options:
  --alg ALG               the gateway's token.algorithm, which decides the key that
                          signs now (default: the configuration's, else the algorithm of
                          the keys in the directory)
  --to ALG                algorithm of the new key (default: that of the key that signs
                          now)
  --jwks-max-age SECONDS  Cache-Control max-age of the JWKS, 0 to 86400 (default: the
                          configuration's keys.jwksMaxAgeSeconds, else 300)
  --skew SECONDS          clock skew allowed between replicas, 0 to 600 (default: the
                          configuration's clockSkewSeconds, else 60)
  --max-lifetime SECONDS  longest access-token lifetime, 1 to 86400 (default 86400, the
                          most any client may have: a lifetime raised later is covered)
${DIR_HELP}
`);

const LIST_HELP = alignHelp(`Usage: portaria keys list [--alg ES256|EdDSA|RS256|PS256] [-o json]

Shows every key, newest first: kid, algorithm, state and its schedule (UTC).
States: pending (not signing yet), active (signs now), retiring (no longer signs, still
published and verifying), retired (left the JWKS). "always": no schedule entry (a key
made by "keys generate"); 1970-01-01T00:00:00Z: such a key, scheduled by a rotation.

Options:
  --alg ALG          the gateway's token.algorithm, which decides the active key
                     (default: the configuration's, else the algorithm of the keys in
                     the directory)
${OUTPUT_HELP}
${DIR_HELP}
`);

const REMOVE_HELP = alignHelp(`Usage: portaria keys remove <kid> [--alg ES256|EdDSA|RS256|PS256]

Deletes the key's file and its schedule entry: gateways stop publishing the key and
stop accepting its tokens at their next reload (at once with file watching, or SIGHUP).
Removing a key a rotation added that does not sign yet cancels that rotation: the key it
was to replace keeps signing. A removal that would leave no signing key at some later
moment is refused.
A key that signs now, or did up to the clock skew ago, is kept until another key signs
at both moments (else a gateway whose clock runs behind would be left without one).
A compromised signing key:
  portaria keys rotate --jwks-max-age 0   (the new key signs after the skew)
  portaria keys remove <old kid>          (once allowed: it prints when)
Third parties that cached the JWKS keep the old key until their cache expires, and may
refuse the new key's tokens until they fetch the JWKS again.

Options:
  --alg ALG          the gateway's token.algorithm, which decides the key that signs
                     (a key of another algorithm signs there only after a rotation
                     "--to" it); default: the configuration's, else the algorithm of
                     the keys in the directory
  --skew SECONDS     the gateways' clockSkewSeconds, 0 to 600 (default: the
                     configuration's, else 60)
  --now TIME         the moment that decides which key signs (default: now)
${DIR_HELP}
`);

export async function runKeysCommand(args: readonly string[], ctx: CliContext): Promise<void> {
  const [command, ...rest] = args;
  if (command === undefined) throw new UsageError('keys', 'missing command');
  if (command === '--help' || command === '-h') return ctx.out(KEYS_HELP);
  if (command === 'generate') return generate(rest, ctx);
  if (command === 'rotate') return rotate(rest, ctx);
  if (command === 'list') return list(rest, ctx);
  if (command === 'remove') return remove(rest, ctx);
  throw unknownCommand('keys', command, ['generate', 'rotate', 'list', 'remove']);
}

async function generate(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(GENERATE_HELP);
  const cmd = 'keys generate';
  const parsed = parseCommandArgs(cmd, args, {
    alg: { type: 'string' },
    'keys-dir': { type: 'string' },
    ...CONFIG_OPTION,
  });
  expectPositionals(cmd, parsed, []);
  const config = await gatewayConfig(parsed, ctx);
  const dir = keysDir(parsed, ctx, config);
  const alg = await algorithmOption(cmd, parsed, dir, ctx.now().getTime(), config);
  const key = await generateSigningKey(alg, ctx.now());
  const path = await writeSigningKey(dir, key);
  ctx.out(`kid:  ${key.kid}\n`);
  ctx.out(`alg:  ${alg}\n`);
  ctx.out(`path: ${path}\n`);
  if (config !== null && alg !== config.token.algorithm) {
    ctx.err(
      `warning: the configuration signs with ${config.token.algorithm} (token.algorithm): this ${alg} key is published but never signs there ("keys list" shows it unused)\n`,
    );
  }
}

async function rotate(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(ROTATE_HELP);
  const cmd = 'keys rotate';
  const parsed = parseCommandArgs(cmd, args, {
    alg: { type: 'string' },
    to: { type: 'string' },
    'keys-dir': { type: 'string' },
    ...CONFIG_OPTION,
    'jwks-max-age': { type: 'string' },
    skew: { type: 'string' },
    'max-lifetime': { type: 'string' },
    now: { type: 'string' },
  });
  expectPositionals(cmd, parsed, []);
  const config = await gatewayConfig(parsed, ctx);
  const dir = keysDir(parsed, ctx, config);
  const now = nowOption(cmd, parsed, ctx);
  const algorithm = await algorithmOption(cmd, parsed, dir, now.getTime(), config);
  const to = stringValue(parsed, 'to');
  const jwksMaxAge = secondsOption(
    cmd,
    parsed,
    'jwks-max-age',
    0,
    86_400,
    config?.keys.jwksMaxAgeSeconds ?? 300,
  );
  const result = await rotateKeys(dir, {
    algorithm,
    ...(to === undefined ? {} : { to: knownAlgorithm(cmd, '--to', to) }),
    now,
    jwksMaxAgeSeconds: jwksMaxAge,
    clockSkewSeconds: secondsOption(cmd, parsed, 'skew', 0, 600, config?.clockSkewSeconds ?? 60),
    maxLifetimeSeconds: secondsOption(cmd, parsed, 'max-lifetime', 1, 86_400, 86_400),
  });
  const { kid, schedule } = result.added;
  ctx.out(`kid:        ${kid}\n`);
  ctx.out(`alg:        ${result.alg}\n`);
  ctx.out(`path:       ${result.path}\n`);
  ctx.out(`publishAt:  ${formatInstant(schedule.publishAt)}\n`);
  ctx.out(`activateAt: ${formatInstant(schedule.activateAt)}\n`);
  for (const old of result.retiring) {
    const { retireAt, removeAt } = old.schedule;
    ctx.out(
      `retiring:   ${old.kid} retireAt ${instant(retireAt, 'never')} removeAt ${instant(removeAt, 'never')}\n`,
    );
  }
  const [previous] = result.retiring;
  const instead = previous === undefined ? '' : ` in place of ${previous.kid}`;
  const removal =
    previous?.schedule.removeAt == null
      ? ''
      : `; ${previous.kid} leaves the JWKS at ${formatInstant(previous.schedule.removeAt)}`;
  ctx.out(
    `Rotation scheduled: ${kid} is published now and signs from ${formatInstant(schedule.activateAt)}${instead}${removal}.\n`,
  );
  // The plan holds only if every replica publishes the key a JWKS max-age before it signs.
  ctx.out(
    `Every gateway must have loaded this directory by ${formatInstant(schedule.activateAt - jwksMaxAge * 1000)} (a gateway that loads it later logs "signing key published late").\n`,
  );
}

async function list(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(LIST_HELP);
  const cmd = 'keys list';
  const parsed = parseCommandArgs(cmd, args, {
    alg: { type: 'string' },
    'keys-dir': { type: 'string' },
    ...CONFIG_OPTION,
    ...OUTPUT_OPTION,
    now: { type: 'string' },
  });
  expectPositionals(cmd, parsed, []);
  const format = outputFormat(cmd, parsed);
  const config = await gatewayConfig(parsed, ctx);
  const dir = keysDir(parsed, ctx, config);
  const now = nowOption(cmd, parsed, ctx).getTime();
  const algorithm = await algorithmOption(cmd, parsed, dir, now, config);
  const { keys, schedule } = await readKeyDirectory(dir, now);
  const ring = new KeyRing(keys, schedule, algorithm, { now: () => now });
  const states = ring.states().map((k) => ({ ...k, state: keyState(k, algorithm) }));
  if (format === 'json') {
    // Field names are documented (docs/cli.md); null instants: no schedule entry / never.
    return ctx.out(
      jsonLines(
        states.map((k) => ({
          kid: k.kid,
          alg: k.alg,
          state: k.state,
          publishAt: k.publishAt === null ? null : formatInstant(k.publishAt),
          activateAt: k.activateAt === null ? null : formatInstant(k.activateAt),
          retireAt: k.retireAt === null ? null : formatInstant(k.retireAt),
          removeAt: k.removeAt === null ? null : formatInstant(k.removeAt),
        })),
      ),
    );
  }
  const rows = [['KID', 'ALG', 'STATE', 'PUBLISH', 'ACTIVATE', 'RETIRE', 'REMOVE']];
  for (const k of states) {
    rows.push([
      k.kid,
      k.alg,
      k.state,
      instant(k.publishAt, 'always'),
      instant(k.activateAt, 'always'),
      instant(k.retireAt, 'never'),
      instant(k.removeAt, 'never'),
    ]);
  }
  ctx.out(table(rows));
  const unused = [...new Set(states.filter((k) => k.state === 'unused').map((k) => k.alg))];
  if (unused.length > 0) {
    ctx.out(
      `\nunused: algorithm ${unused.join(', ')} ≠ configured ${algorithm} (token.algorithm): such a key never signs here; "portaria keys remove <kid>" takes it out.\n`,
    );
  }
}

/**
 * A key's state for a gateway signing with `algorithm`: the ring's, except that a key of
 * another algorithm without a schedule entry, published but never picked as signer, is
 * `unused` (not `retiring`: nothing schedules it out, and `keys remove` takes it at
 * once). One with an entry is a rotation's (`keys rotate --to`): it has the ring's state.
 */
function keyState(key: KeyState, algorithm: SigningAlgorithm): KeyStateName | 'unused' {
  const unused = key.alg !== algorithm && key.activateAt === null && key.state !== 'retired';
  return unused ? 'unused' : key.state;
}

async function remove(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(REMOVE_HELP);
  const cmd = 'keys remove';
  const parsed = parseCommandArgs(cmd, args, {
    alg: { type: 'string' },
    'keys-dir': { type: 'string' },
    ...CONFIG_OPTION,
    now: { type: 'string' },
    skew: { type: 'string' },
  });
  const [kid] = expectPositionals(cmd, parsed, ['kid']);
  const config = await gatewayConfig(parsed, ctx);
  const dir = keysDir(parsed, ctx, config);
  const now = nowOption(cmd, parsed, ctx);
  const algorithm = await algorithmOption(cmd, parsed, dir, now.getTime(), config);
  const removed = await removeKey(
    dir,
    kid as string,
    now,
    secondsOption(cmd, parsed, 'skew', 0, 600, config?.clockSkewSeconds ?? 60),
    algorithm,
  );
  ctx.out(`removed:    ${removed.kid}${removed.alg === null ? '' : ` (${removed.alg})`}\n`);
  ctx.out(`files:      ${removed.files.join(', ')}\n`);
  if (removed.keptSigning.length > 0) {
    ctx.out(
      `Rotation cancelled: ${removed.keptSigning.join(', ')} keeps signing (its retirement is cleared).\n`,
    );
  }
  ctx.out(
    'Gateways stop publishing the key and refuse its tokens at their next reload (file watching, or SIGHUP).\n',
  );
}

/**
 * `--alg`, else the configuration's `token.algorithm`, else the one algorithm of the keys
 * in `dir` (a gateway signs with the keys of
 * its token.algorithm: defaulting to ES256 in a directory of RS256 keys would list no
 * active key and rotate to a key that never signs), else ES256 for an empty or absent
 * directory. Keys of several algorithms: the caller must say which one the gateway uses.
 */
async function algorithmOption(
  cmd: string,
  parsed: ParsedCommand,
  dir: string,
  now: number,
  config: Config | null,
): Promise<SigningAlgorithm> {
  const alg = stringValue(parsed, 'alg');
  if (alg !== undefined) return knownAlgorithm(cmd, '--alg', alg);
  if (config !== null) return config.token.algorithm;
  let algorithms: SigningAlgorithm[];
  try {
    const { keys } = await readKeyDirectory(dir, now);
    algorithms = [...new Set(keys.map((k) => k.alg))].sort();
  } catch {
    // An unreadable directory is reported by the command's own read (or write).
    return 'ES256';
  }
  const [only, ...others] = algorithms;
  if (only === undefined) return 'ES256';
  if (others.length === 0) return only;
  throw new UsageError(
    cmd,
    `${dir} holds ${algorithms.join(' and ')} keys: pass --alg, the gateway's token.algorithm`,
  );
}

function knownAlgorithm(cmd: string, option: string, alg: string): SigningAlgorithm {
  if (!(SIGNING_ALGORITHMS as readonly string[]).includes(alg)) {
    throw new UsageError(cmd, `${option} must be one of ${SIGNING_ALGORITHMS.join(', ')}`);
  }
  return alg as SigningAlgorithm;
}

function keysDir(parsed: ParsedCommand, ctx: CliContext, config: Config | null): string {
  return keysDirFor(parsed, ctx, config);
}

function secondsOption(
  cmd: string,
  parsed: ParsedCommand,
  name: string,
  min: number,
  max: number,
  fallback: number,
): number {
  const text = stringValue(parsed, name);
  if (text === undefined) return fallback;
  const value = /^[0-9]{1,9}$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) {
    throw new UsageError(
      cmd,
      `--${name}: must be an integer number of seconds from ${min} to ${max}`,
    );
  }
  return value;
}

/** `--now` (undocumented, for tests): the instant the command acts at. */
function nowOption(cmd: string, parsed: ParsedCommand, ctx: CliContext): Date {
  const text = stringValue(parsed, 'now');
  if (text === undefined) return ctx.now();
  const ms = parseInstant(text);
  if (ms === undefined)
    throw new UsageError(cmd, '--now: must be an ISO 8601 date-time with a time zone');
  return new Date(ms);
}

function instant(ms: number | null, none: string): string {
  return ms === null ? none : formatInstant(ms);
}
