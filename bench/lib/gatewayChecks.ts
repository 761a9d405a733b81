/**
 * After-run checks of the gateway under test: how many requests its metrics counted and
 * how many access-log lines it wrote — both must equal the requests it served, which
 * proves the access log and the metrics were really on.
 */
import { createReadStream } from 'node:fs';

/** Sum of `portaria_http_requests_total` on the admin listener's `/metrics`, upgrades left out. */
export async function countedRequests(adminUrl: string): Promise<string> {
  const res = await fetch(`${adminUrl}/metrics`);
  const text = await res.text();
  if (res.status !== 200) return `n/a (/metrics answered ${res.status})`;
  let sum = 0;
  for (const match of text.matchAll(/^portaria_http_requests_total(?:\{([^}]*)\})? (\S+)$/gm)) {
    // WebSocket upgrades (a 101: class 1xx) count as requests but log `upgrade` lines.
    if (match[1]?.includes('status_class="1xx"')) continue;
    sum += Number(match[2]);
  }
  return String(sum);
}

/** Lines of `file` containing `needle`, read as a stream (the log can be large). */
export async function countLines(file: string, needle: string): Promise<number> {
  let count = 0;
  let carry = '';
  for await (const chunk of createReadStream(file, { encoding: 'utf8' })) {
    const parts = (carry + String(chunk)).split('\n');
    carry = parts.pop() ?? '';
    for (const part of parts) if (part.includes(needle)) count++;
  }
  return count + (carry.includes(needle) ? 1 : 0);
}
