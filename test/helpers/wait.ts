/** Bounded polling and log-line lookups for tests that observe side effects asynchronously. */
import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `check` every `intervalMs` until it returns a value other than undefined; throws after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 2000,
  intervalMs = 10,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(intervalMs);
  }
}

export type LogLine = Record<string, unknown>;

/** Every captured line parsed as JSON (throws on a line that is not). */
export function parsedLogs(logs: readonly string[]): LogLine[] {
  return logs.map((line) => JSON.parse(line) as LogLine);
}

/** The access line (`request` / `request failed`) of one request id, once it is written. */
export function accessLineOf(logs: readonly string[], reqId: string): Promise<LogLine> {
  return waitFor(`the access line of ${reqId}`, () =>
    parsedLogs(logs).find(
      (l) =>
        l['portaria.request_id'] === reqId && (l.msg === 'request' || l.msg === 'request failed'),
    ),
  );
}
