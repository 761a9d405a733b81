/**
 * The parent side of the bench's process protocol (see `childProtocol.ts`): starts a
 * compiled bench child with the same Node binary, waits for its announcement line, and
 * stops it with SIGTERM, collecting the final line it prints on the way out.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface Child<Info> {
  readonly name: string;
  readonly info: Info;
  readonly pid: number | undefined;
  /** SIGTERM, then the child's final JSON line (if it printed one). */
  stop(): Promise<Record<string, unknown> | undefined>;
}

const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;

export async function spawnChild<Info>(
  name: string,
  script: URL,
  args: readonly string[],
  nodeArgs: readonly string[] = [],
  readyTimeoutMs = READY_TIMEOUT_MS,
): Promise<Child<Info>> {
  const child = spawn(process.execPath, [...nodeArgs, script.pathname, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Record<string, unknown>[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const info = await new Promise<Info>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name}: not ready after ${readyTimeoutMs} ms`)),
      readyTimeoutMs,
    );
    child.once('error', reject);
    exited.then((code) => reject(new Error(`${name}: exited with ${code} before it was ready`)));
    createInterface({ input: requireStdout(child) }).on('line', (line) => {
      const value = parseLine(line);
      if (value === undefined) return;
      lines.push(value);
      if (lines.length === 1) {
        clearTimeout(timer);
        resolve(value as Info);
      }
    });
  });
  return {
    name,
    info,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
      return lines.length > 1 ? lines[lines.length - 1] : undefined;
    },
  };
}

function requireStdout(child: ChildProcess) {
  if (child.stdout === null) throw new Error('child has no stdout pipe');
  return child.stdout;
}

function parseLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
