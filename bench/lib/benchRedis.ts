/**
 * A real `redis-server` on a free loopback port for a bench mode: the tests' starter
 * (test/helpers/redisServer.ts, which proves the port is its own) with its `t.after`
 * cleanups collected here and run by `stop`. The server inherits this process's CPU
 * affinity at spawn: pin the bench first to keep Redis off the measured CPU.
 */
import type { TestContext } from 'node:test';
import { type RedisServer, startRedis } from '../../test/helpers/redisServer.js';

export interface BenchRedis {
  readonly server: RedisServer;
  /** Kills the server and removes its directory. */
  stop(): Promise<void>;
}

export async function startBenchRedis(): Promise<BenchRedis> {
  const cleanups: (() => unknown)[] = [];
  const context = { after: (fn: () => unknown) => cleanups.push(fn) } as unknown as TestContext;
  const stop = async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
  };
  try {
    return { server: await startRedis(context), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
