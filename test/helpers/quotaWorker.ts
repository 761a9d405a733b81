/**
 * A node:cluster worker standing in for a gateway worker's quota step: the real
 * `WorkerChannel` and `IpcMeter`. Told `{ test: 'checks', policy, key, count }`, it makes
 * `count` checks at once and sends back `{ test: 'readings', readings }`.
 */
import { IpcMeter } from '../../src/cluster/ipcMeter.js';
import { WorkerChannel } from '../../src/cluster/workerChannel.js';
import type { QuotaPolicy } from '../../src/limits/quotaPolicy.js';

interface Checks {
  readonly test: 'checks';
  readonly policy: QuotaPolicy;
  readonly key: string;
  readonly count: number;
}

const meter = new IpcMeter(new WorkerChannel());
process.on('message', (message: Partial<Checks>) => {
  if (message.test !== 'checks' || message.policy === undefined) return;
  const { policy, key = '', count = 0 } = message;
  void Promise.all(Array.from({ length: count }, () => meter.check(policy, key))).then((readings) =>
    process.send?.({ test: 'readings', readings }),
  );
});
process.send?.({ test: 'ready' });
