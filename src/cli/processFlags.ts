/**
 * The gateway process's own flags, answered before anything loads: `--help`/`-h` (usage,
 * exit 0), `--version`/`-V` (the package version, exit 0), and any flag the gateway does
 * not take (usage on stderr, exit 2). Returns the exit code, or null to start.
 */
import { parseArgs } from 'node:util';
import { packageVersion } from './packageVersion.js';

export const GATEWAY_USAGE = `Usage: node dist/main.js --config FILE | --demo

  --config FILE   YAML configuration (or set PORTARIA_CONFIG); every setting can
                  also come from a PORTARIA_* variable (docs/configuration.md)
  --demo          try it: local demo data in .portaria-demo/ and a demo upstream
  -h, --help      this text
  -V, --version   the version

Check a configuration without starting: portaria config check --config FILE
`;

export interface ProcessStreams {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

export async function processFlags(
  argv: readonly string[],
  streams: ProcessStreams,
): Promise<number | null> {
  let values: { help?: boolean | undefined; version?: boolean | undefined };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        config: { type: 'string' },
        demo: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'V' },
      },
      strict: true,
    }));
  } catch (error) {
    const first = ((error as Error).message.split('\n')[0] ?? '').trim();
    streams.err(`portaria: ${first}\n${GATEWAY_USAGE}`);
    return 2;
  }
  if (values.help === true) {
    streams.out(GATEWAY_USAGE);
    return 0;
  }
  if (values.version === true) {
    streams.out(`portaria ${await packageVersion()}\n`);
    return 0;
  }
  return null;
}
