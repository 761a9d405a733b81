import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { flatness, type Measured, medianRatio, perSecond } from '../../bench/lib/comparison.js';
import { splitMode } from '../../bench/lib/modeArgs.js';
import { parseRssBytes } from '../../bench/lib/processTree.js';
import { parseWrkOutput } from '../../bench/lib/wrk.js';
import { PATH, worstCaseRoutes } from '../../bench/modes/routes.js';
import { haproxyConfig } from '../../bench/peers/haproxy.js';
import { validateConfig } from '../../src/config/validateConfig.js';
import { compileRouteTable } from '../../src/proxy/routeTable.js';

describe('splitMode', () => {
  const cases: ReadonlyArray<readonly [string[], string | undefined, string[]]> = [
    [['--mode', 'verify', '--rounds', '2'], 'verify', ['--rounds', '2']],
    [['--rounds', '2', '--mode=token'], 'token', ['--rounds', '2']],
    [['--diagnose'], undefined, ['--diagnose']],
  ];
  for (const [argv, mode, rest] of cases) {
    test(`${argv.join(' ')} → mode ${mode ?? '(default)'}`, () => {
      assert.deepEqual(splitMode(argv), { mode, rest });
    });
  }
});

describe('parseWrkOutput', () => {
  test('reads the rate, the percentiles and every error count of a Lua-scripted run', () => {
    const text = `Running 5s test @ http://127.0.0.1:4000/v1/orders/42
  1 threads and 50 connections
  Latency Distribution
     50%    2.10ms
     99%   12.50ms
  41234 requests in 5.00s, 9.10MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 7
Requests/sec:   8246.80
Transfer/sec:      1.82MB
`;
    assert.deepEqual(parseWrkOutput(text), {
      requests: 41234,
      requestsPerSec: 8246.8,
      p50Ms: 2.1,
      p99Ms: 12.5,
      non2xx: 7,
      socketErrors: 3,
    });
  });
});

test('parseRssBytes reads VmRSS in kB from /proc/<pid>/status text', () => {
  assert.equal(parseRssBytes('Name:\tnode\nVmRSS:\t  123456 kB\nThreads:\t7\n'), 123456 * 1024);
  assert.ok(Number.isNaN(parseRssBytes('Name:\tkthread\n')));
});

test('the routes mode builds valid routes of which only the slowest-found one matches its path', () => {
  const upstream = 'http://127.0.0.1:4000';
  const routes = worstCaseRoutes(1000, upstream);
  assert.equal(new Set(routes.map((r) => r.prefix)).size, 1000);
  const config = validateConfig(
    {
      issuer: 'https://portaria.bench',
      audience: 'bench-api',
      routes,
      upstream: { default: { upstream } },
    },
    { baseDir: '/tmp' },
  );
  const table = compileRouteTable(config);
  assert.equal(table.match(PATH)?.id, 'hit');
  // The route the request hits is the shortest, so a longest-first scan tries it last.
  const hit = routes.find((r) => r.id === 'hit')?.prefix as string;
  assert.ok(routes.every((r) => r.id === 'hit' || (r.prefix as string).length > hit.length));
  assert.ok(routes.every((r) => (r.prefix as string).length <= PATH.length));
});

test('the HAProxy peer verifies ES256, exp, iss and aud on one thread', () => {
  const text = haproxyConfig(8443, new URL('http://127.0.0.1:4000'), '/keys/public.pem');
  assert.match(text, /^\s*nbthread 1$/m);
  assert.match(text, /jwt_verify\(txn\.alg,"\/keys\/public\.pem"\)/);
  assert.match(text, /jwt_payload_query\('\$\.exp','int'\)/);
  assert.match(text, /jwt_payload_query\('\$\.iss'\) -m str https:\/\/portaria\.bench/);
  assert.match(text, /jwt_payload_query\('\$\.aud'\) -m str bench-api/);
  assert.match(text, /server up 127\.0\.0\.1:4000/);
});

describe('ratios', () => {
  const line = (label: string, rates: number[]): Measured => ({
    target: { label, url: '', pid: undefined },
    samples: rates.map((perSecond) => ({
      perSecond,
      p99Ms: 1,
      requests: 1,
      cpuUsPerRequest: 1,
      clean: true,
    })),
  });
  test('a ratio is the median of the per-round ratios, so one disturbed round does not decide', () => {
    const a = line('a', [90, 95, 10]);
    const b = line('b', [100, 100, 100]);
    assert.equal(medianRatio(a, b, perSecond).median, 0.9);
  });
  test('flatness fails when one row leaves the ±10 % band', () => {
    assert.match(flatness([line('a', [100]), line('b', [95])]), /→ FLAT/);
    assert.match(flatness([line('a', [100]), line('b', [85])]), /NOT FLAT/);
  });
});
