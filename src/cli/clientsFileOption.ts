/**
 * The option every `portaria clients` command shares: which clients file to edit, given
 * directly or read from the gateway's configuration (as the gateway itself finds it).
 */
import { type CliContext, type OptionsConfig, type ParsedCommand, stringValue } from './args.js';
import {
  CONFIG_HELP,
  CONFIG_OPTION,
  clientsFileFor,
  DEFAULT_CLIENTS_FILE,
  gatewayConfig,
} from './gatewayConfig.js';

export const FILE_OPTION: OptionsConfig = { 'clients-file': { type: 'string' }, ...CONFIG_OPTION };

export const FILE_HELP = `  --clients-file PATH  clients file (default: the configuration's clients.file, else
                       $PORTARIA_CLIENTS__FILE, else ${DEFAULT_CLIENTS_FILE})
${CONFIG_HELP}`;

/** `--clients-file`, else the configuration's `clients.file`. */
export async function clientsFile(parsed: ParsedCommand, ctx: CliContext): Promise<string> {
  const explicit = stringValue(parsed, 'clients-file');
  if (explicit !== undefined) return explicit;
  return clientsFileFor(parsed, ctx, await gatewayConfig(parsed, ctx));
}
