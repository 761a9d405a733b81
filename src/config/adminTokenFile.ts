/**
 * The admin API token from `admin.tokenFile`, with the rule start-up and `portaria config
 * check` both apply: readable, at least 16 visible ASCII characters.
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from './configError.js';

/** Shortest admin token accepted: it guards revocations, so it must not be guessable. */
const MIN_ADMIN_TOKEN_LENGTH = 16;

/** The token; null (API off) when no file is configured. A problem is a ConfigError. */
export async function readAdminToken(file: string | null): Promise<string | null> {
  if (file === null) return null;
  let token: string;
  try {
    token = (await readFile(file, 'utf8')).trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError([`admin.tokenFile: cannot read ${file} (${code})`]);
  }
  if (token.length < MIN_ADMIN_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(token)) {
    throw new ConfigError([
      `admin.tokenFile: ${file} must hold at least ${MIN_ADMIN_TOKEN_LENGTH} visible ASCII characters`,
    ]);
  }
  return token;
}
