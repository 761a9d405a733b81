/**
 * A closed-loop load from this process: `connections` lanes of back-to-back GETs to one
 * path of an undici pool for `seconds`, counting 200s and the other statuses apart. Used
 * where wrk cannot make the requests (a fresh DPoP proof per request) or where the modes
 * beside it already use an undici pool.
 */
import type { Pool } from 'undici';

export interface LoadDone {
  requests: number;
  failures: number;
  statuses: Map<number, number>;
}

export async function closedLoad(
  pool: Pool,
  path: string,
  headers: () => Record<string, string>,
  seconds: number,
  connections: number,
): Promise<LoadDone> {
  const deadline = performance.now() + seconds * 1000;
  const done: LoadDone = { requests: 0, failures: 0, statuses: new Map() };
  const lane = async () => {
    while (performance.now() < deadline) {
      const res = await pool.request({ method: 'GET', path, headers: headers() });
      await res.body.dump();
      if (res.statusCode === 200) done.requests++;
      else {
        done.failures++;
        done.statuses.set(res.statusCode, (done.statuses.get(res.statusCode) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, lane));
  return done;
}
