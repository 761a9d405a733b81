/** Runs the compiled CLI as a child process, as an operator would. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type ProcessResult, runToEnd, testEnv } from './process.js';

export const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export type CliResult = ProcessResult;

export function runCli(
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string>; input?: string },
): Promise<CliResult> {
  return runToEnd(process.execPath, [CLI, ...args], {
    cwd: options.cwd,
    env: testEnv(options.env),
    ...(options.input === undefined ? {} : { input: options.input }),
  });
}

export async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-cli-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
