/**
 * The decisions mode's instruments on real processes: the gRPC load generator against a
 * real gateway's Envoy Check entry (its calls answered, every denial counted, the
 * gateway's and its own CPU priced), and the reaped-children CPU that prices wrk.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { measureGrpc } from '../../bench/lib/grpcMeasure.js';
import { reapedChildrenCpuUs } from '../../bench/lib/processCpu.js';
import { startGateway } from '../helpers/fixture.js';

const settings = () => ({
  mode: 'authorizer',
  server: { trustedProxies: ['127.0.0.1'] },
  authorizer: { host: '127.0.0.1', port: 0, grpc: { enabled: true, port: 0 } },
  upstream: { default: null },
  routes: [{ id: 'orders', prefix: '/v1/orders', scopes: ['orders:read'] }],
});

describe('gRPC load generator', () => {
  test('allows are counted as calls with no failure; a forged token makes every answer a counted denial', async (t) => {
    const gw = await startGateway(t, { settings });
    const token = await gw.token();
    const run = {
      target: gw.grpcUrl.slice('grpc://'.length),
      path: '/v1/orders/42',
      inFlight: 4,
      channels: 2,
      warmupS: 0,
      durationS: 1,
      pid: process.pid,
    };
    const allowed = await measureGrpc({ ...run, token });
    assert.equal(allowed.notOk, 0, String(allowed.firstNotOk));
    assert.ok(allowed.calls > 0 && allowed.answered >= allowed.calls);
    assert.ok(allowed.perSecond > 0 && allowed.p99Ms >= allowed.p50Ms);
    // The gateway runs in this process here: its CPU and the generator's are both priced.
    assert.ok(allowed.cpuUsPerDecision > 0 && allowed.loadCpuUsPerDecision > 0);

    const refused = await measureGrpc({ ...run, token: `${token.slice(0, -4)}AAAA` });
    assert.ok(refused.answered > 0);
    assert.equal(refused.notOk, refused.answered);
    assert.match(String(refused.firstNotOk), /^denied, HTTP (Unauthorized|401)$/);
  });
});

test('reapedChildrenCpuUs grows by the CPU of a child that ran and was waited for', async () => {
  const before = reapedChildrenCpuUs();
  await promisify(execFile)(process.execPath, [
    '-e',
    'const end = process.cpuUsage().user + 300000; while (process.cpuUsage().user < end);',
  ]);
  const grown = reapedChildrenCpuUs() - before;
  assert.ok(grown >= 250_000, `grew by ${grown} µs`);
});
