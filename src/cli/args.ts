/**
 * Argument parsing shared by the CLI commands: `node:util` `parseArgs` in strict mode,
 * with its errors turned into one short usage line (`unknown option --foo`), plus the
 * context every command runs in (environment, output, stdin, clock), injected so the
 * commands never touch `process` themselves.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { likelyMeant } from '../lib/nearestName.js';

export interface CliContext {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Writes to standard output. */
  readonly out: (text: string) => void;
  /** Writes to standard error (warnings that must not mix with parseable output). */
  readonly err: (text: string) => void;
  /** Reads standard input to its end. */
  readonly readStdin: () => Promise<string>;
  readonly now: () => Date;
  /** The working directory relative paths start from. */
  readonly cwd: string;
  /** `--config FILE` given before the group (`portaria --config FILE clients list`). */
  readonly configFile?: string;
}

/** Wrong invocation: exit code 2, one line naming the command and what is wrong. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  /** The command path (`clients add`), '' for the top level. */
  readonly command: string;
  constructor(command: string, message: string) {
    super(message);
    this.command = command;
  }
}

/** A failure the command has already printed (`-o json`): exit 1, nothing more on stderr. */
export class AlreadyReported extends Error {
  override readonly name = 'AlreadyReported';
  constructor() {
    super('failed (reported on standard output)');
  }
}

export type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

export interface ParsedCommand {
  readonly values: Readonly<Record<string, string | boolean | undefined>>;
  readonly positionals: readonly string[];
}

export function parseCommandArgs(
  command: string,
  args: readonly string[],
  options: OptionsConfig,
): ParsedCommand {
  try {
    const { values, positionals } = parseArgs({
      args,
      options,
      strict: true,
      allowPositionals: true,
    });
    for (const [name, value] of Object.entries(values)) {
      // A path or id option given as '' would name the working directory or nothing.
      if (value === '') throw new UsageError(command, `option --${name} needs a non-empty value`);
    }
    return { values: values as ParsedCommand['values'], positionals };
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(command, describeParseError(err, args, options));
  }
}

/** `unknown command "lsit" (did you mean "list"?)`: a group's or the top level's. */
export function unknownCommand(
  command: string,
  given: string,
  known: readonly string[],
): UsageError {
  const meant = likelyMeant(given, known);
  const hint = meant === null ? '' : ` (did you mean ${JSON.stringify(meant)}?)`;
  return new UsageError(command, `unknown command ${JSON.stringify(given)}${hint}`);
}

/** Exactly the named positionals, in order; anything missing or extra is a usage error. */
export function expectPositionals(
  command: string,
  parsed: ParsedCommand,
  names: readonly string[],
): string[] {
  const given = parsed.positionals;
  if (given.length < names.length)
    throw new UsageError(command, `missing <${names[given.length]}>`);
  if (given.length > names.length) {
    throw new UsageError(command, `unexpected argument ${JSON.stringify(given[names.length])}`);
  }
  return [...given];
}

/** `--output table|json` (`-o json`), for every command that lists. */
export const OUTPUT_OPTION: OptionsConfig = { output: { type: 'string', short: 'o' } };

export const OUTPUT_HELP = `  -o, --output FORMAT  table (default) or json (stable field names: docs/cli.md)`;

export function outputFormat(command: string, parsed: ParsedCommand): 'table' | 'json' {
  const value = stringValue(parsed, 'output') ?? 'table';
  if (value !== 'table' && value !== 'json') {
    throw new UsageError(command, `--output: must be table or json (got ${JSON.stringify(value)})`);
  }
  return value;
}

/** A list as `-o json` prints it: one JSON document, an array, and a final newline. */
export function jsonLines(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

export function stringValue(parsed: ParsedCommand, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** True when the arguments ask for help (before any `--` terminator). */
export function wantsHelp(args: readonly string[]): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}

/** An environment variable, with empty treated as unset. */
export function envValue(ctx: CliContext, name: string): string | undefined {
  const value = ctx.env[name];
  return value === undefined || value === '' ? undefined : value;
}

function describeParseError(err: unknown, args: readonly string[], options: OptionsConfig): string {
  const { code, message } = err as { code?: string; message?: string };
  const option = /'(-[^' ]+)/.exec(message ?? '')?.[1] ?? 'option';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const meant = option.startsWith('--')
      ? likelyMeant(
          option,
          Object.keys(options).map((name) => `--${name}`),
        )
      : null;
    return `unknown option ${option}${meant === null ? '' : ` (did you mean ${meant}?)`}`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (message?.includes('does not take')) return `option ${option} does not take a value`;
    // `--lifetime -5`, `--jti -6v4…`: parseArgs reads a value starting with "-" as an option.
    const next = args[args.indexOf(option) + 1];
    if (next?.startsWith('-') && next.length > 1) {
      return `option ${option}: a value starting with "-" is written ${option}=${next}`;
    }
    return `option ${option} needs a value`;
  }
  return (message ?? 'invalid arguments').split('\n')[0] ?? 'invalid arguments';
}
