/**
 * `portaria keys generate`: creates a signing key in the keys directory.
 *
 * The new key's kid starts with the current UTC time, so it is the newest key of its
 * algorithm: the gateway signs with it from its next start, and keeps the older keys
 * for verifying tokens they signed (and in the JWKS) until they are deleted.
 */
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from '../config/types.js';
import { generateSigningKey, writeSigningKey } from '../keys/generateKey.js';
import {
  type CliContext,
  envValue,
  expectPositionals,
  parseCommandArgs,
  stringValue,
  UsageError,
  wantsHelp,
} from './args.js';

export const DEFAULT_KEYS_DIR = './data/keys';

export const KEYS_HELP = `Usage: portaria keys <command> [options]

Manage the gateway's token-signing keys.

Commands:
  generate [--alg ES256|EdDSA|RS256]   create a new signing key

Run "portaria keys <command> --help" for a command's options.
`;

const GENERATE_HELP = `Usage: portaria keys generate [--alg ES256|EdDSA|RS256]

Creates a private key (PKCS#8 PEM, mode 0600) named after its new kid. The gateway
signs with the newest key of its configured algorithm from its next start.

Options:
  --alg ALG          ES256 (P-256, default), EdDSA (Ed25519) or RS256 (RSA 3072)
  --keys-dir PATH    keys directory (default: $PORTARIA_KEYS_DIR, else ${DEFAULT_KEYS_DIR})
`;

export async function runKeysCommand(args: readonly string[], ctx: CliContext): Promise<void> {
  const [command, ...rest] = args;
  if (command === undefined) throw new UsageError('keys', 'missing command');
  if (command === '--help' || command === '-h') return ctx.out(KEYS_HELP);
  if (command === 'generate') return generate(rest, ctx);
  throw new UsageError('keys', `unknown command ${JSON.stringify(command)}`);
}

async function generate(args: readonly string[], ctx: CliContext): Promise<void> {
  if (wantsHelp(args)) return ctx.out(GENERATE_HELP);
  const cmd = 'keys generate';
  const parsed = parseCommandArgs(cmd, args, {
    alg: { type: 'string' },
    'keys-dir': { type: 'string' },
  });
  expectPositionals(cmd, parsed, []);
  const alg = stringValue(parsed, 'alg') ?? 'ES256';
  if (!(SIGNING_ALGORITHMS as readonly string[]).includes(alg)) {
    throw new UsageError(cmd, `--alg must be one of ${SIGNING_ALGORITHMS.join(', ')}`);
  }
  const dir =
    stringValue(parsed, 'keys-dir') ?? envValue(ctx, 'PORTARIA_KEYS_DIR') ?? DEFAULT_KEYS_DIR;
  const key = await generateSigningKey(alg as SigningAlgorithm, ctx.now());
  const path = await writeSigningKey(dir, key);
  ctx.out(`kid:  ${key.kid}\n`);
  ctx.out(`alg:  ${alg}\n`);
  ctx.out(`path: ${path}\n`);
}
