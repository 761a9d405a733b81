/**
 * A Redis Cluster of three primaries on loopback (no replicas): each started by the Redis
 * helper in cluster mode (bus on port + 10000), the 16384 slots split in three with
 * CLUSTER ADDSLOTSRANGE, the nodes introduced with CLUSTER MEET, and ready once every
 * node reports `cluster_state:ok`.
 */
import type { TestContext } from 'node:test';
import { createRedisClient, type RedisClient } from '../../src/redis/redisClient.js';
import { redisConfig } from '../helpers/redisFixtures.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { waitFor } from '../helpers/wait.js';

export interface RedisCluster {
  readonly nodes: readonly RedisServer[];
  /** `127.0.0.1:<port>` of each node (seed nodes for `redis.cluster.nodes`). */
  readonly seeds: readonly string[];
}

const SLOTS: readonly (readonly [number, number])[] = [
  [0, 5460],
  [5461, 10922],
  [10923, 16383],
];

export async function startCluster(t: TestContext): Promise<RedisCluster> {
  const nodes: RedisServer[] = [];
  for (let i = 0; i < SLOTS.length; i += 1) nodes.push(await startRedis(t, { cluster: true }));
  const clients: RedisClient[] = nodes.map((node) => {
    const client = createRedisClient(redisConfig(node), { role: 'test', offlineQueue: true });
    t.after(() => client.disconnect());
    return client;
  });
  await Promise.all(clients.map((client) => client.connect()));
  await Promise.all(
    clients.map((client, i) => {
      const [first, last] = SLOTS[i] as readonly [number, number];
      return client.call('CLUSTER', 'ADDSLOTSRANGE', first, last);
    }),
  );
  const [first, ...others] = clients;
  for (const node of nodes.slice(1)) {
    await first?.call('CLUSTER', 'MEET', '127.0.0.1', node.port, node.port + 10_000);
  }
  await waitFor(
    'every cluster node reports cluster_state:ok',
    async () => {
      const states = await Promise.all(
        [first, ...others].map((client) => client?.call('CLUSTER', 'INFO')),
      );
      return states.every((info) => /cluster_state:ok/.test(String(info))) ? true : undefined;
    },
    15_000,
    50,
  );
  for (const client of clients) client.disconnect();
  return { nodes, seeds: nodes.map((node) => `127.0.0.1:${node.port}`) };
}
