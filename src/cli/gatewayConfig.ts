/**
 * The gateway's configuration as the CLI reads it: `--config FILE`, else
 * $PORTARIA_CONFIG, loaded exactly as the gateway loads it (the YAML file, then the
 * environment overrides, then validation, all problems at once). Its settings become
 * the commands' defaults, so a command run next to a gateway acts on the gateway's
 * files and timing instead of the CLI's built-in defaults: a rotation scheduled with a
 * JWKS max-age of 300 s for a gateway that publishes with 3600 s would let the new key
 * sign before verifiers caching the old JWKS know it.
 *
 * Precedence, for each setting: the command's own option, then the configuration, then
 * (without a configuration) the setting's environment variable (`PORTARIA_CLIENTS__FILE`,
 * or its short alias) and the built-in default. With a configuration every variable the
 * gateway honours still applies, through the configuration, as it does for the gateway.
 */
import { environmentText } from '../config/environment.js';
import { loadConfig } from '../config/loadConfig.js';
import type { Config } from '../config/types.js';
import {
  type CliContext,
  envValue,
  type OptionsConfig,
  type ParsedCommand,
  stringValue,
} from './args.js';

export const CONFIG_OPTION: OptionsConfig = { config: { type: 'string' } };

export const CONFIG_HELP = `  --config FILE        the gateway's configuration file (default: $PORTARIA_CONFIG);
                       its settings are this command's defaults`;

/**
 * The configuration file: the command's `--config`, else one given before the group
 * (`portaria --config FILE clients list`), else $PORTARIA_CONFIG.
 */
export function configFileOf(parsed: ParsedCommand, ctx: CliContext): string | undefined {
  return stringValue(parsed, 'config') ?? ctx.configFile ?? envValue(ctx, 'PORTARIA_CONFIG');
}

/** The configuration named by `--config` or $PORTARIA_CONFIG; null when neither is given. */
export async function gatewayConfig(
  parsed: ParsedCommand,
  ctx: CliContext,
): Promise<Config | null> {
  const file = configFileOf(parsed, ctx);
  if (file === undefined) return null;
  return loadConfig({ file, env: ctx.env, cwd: ctx.cwd });
}

/**
 * The admin listener's URL for a client on the same host: a wildcard address (the
 * listener takes every interface) is reached on loopback, an IPv6 address in brackets.
 */
export function adminUrlOf(config: Config): string {
  let host = config.admin.host;
  if (host === '0.0.0.0' || host === '') host = '127.0.0.1';
  else if (host === '::') host = '::1';
  if (host.includes(':')) host = `[${host}]`;
  return `http://${host}:${config.admin.port}`;
}

export const DEFAULT_CLIENTS_FILE = './data/clients.json';
export const DEFAULT_KEYS_DIR = './data/keys';

/** `--clients-file`, else the configuration's `clients.file`, else its variable, else the default. */
export function clientsFileFor(
  parsed: ParsedCommand,
  ctx: CliContext,
  config: Config | null,
): string {
  return (
    stringValue(parsed, 'clients-file') ??
    config?.clients.file ??
    environmentText(ctx.env, 'clients.file') ??
    DEFAULT_CLIENTS_FILE
  );
}

/** `--keys-dir`, else the configuration's `keys.dir`, else its variable, else the default. */
export function keysDirFor(parsed: ParsedCommand, ctx: CliContext, config: Config | null): string {
  return (
    stringValue(parsed, 'keys-dir') ??
    config?.keys.dir ??
    environmentText(ctx.env, 'keys.dir') ??
    DEFAULT_KEYS_DIR
  );
}
