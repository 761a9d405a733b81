/**
 * A Redis Sentinel deployment on loopback: a primary and a replica that accept only ACL
 * users (`gw` for the gateways, with the advised permissions; `admin` for replication and
 * the sentinel), and one sentinel with its own password watching them as `portaria`, quick
 * to fail over (down after 500 ms). One sentinel is a quorum of one: enough to elect
 * itself and promote the replica.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { createRedisClient, type RedisClient } from '../../src/redis/redisClient.js';
import { tempDir } from '../helpers/process.js';
import { redisConfig } from '../helpers/redisFixtures.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { waitFor } from '../helpers/wait.js';

export const MASTER_NAME = 'portaria';
export const DATA_PASSWORD = 'gw-data-Hq3Vn8Rt2Lm6Xc9B';
export const SENTINEL_PASSWORD = 'sentinel-Pw4Kz7Jd1Fs5Gy8T';

export interface SentinelGroup {
  readonly primary: RedisServer;
  readonly replica: RedisServer;
  readonly sentinel: RedisServer;
  /** A plain connection to the sentinel (its password given). */
  readonly sentinelClient: RedisClient;
  /** Files holding the data nodes' (user `gw`) and the sentinel's passwords. */
  readonly dataPasswordFile: string;
  readonly sentinelPasswordFile: string;
  /** The port the sentinel names as the primary now. */
  primaryPort(): Promise<number>;
}

/** Replication and the sentinel use `admin`; the gateways `gw`, as docs/deploying.md advises. */
export const GATEWAY_ACL =
  '~portaria:* ~{portaria:* &portaria:* &{portaria:* +@all -@dangerous +info +role';
const ADMIN_PASSWORD = 'admin-Tz5Wc1Np7Kd3Vh9Q';
const DATA_ACL = [
  'user default off',
  `user gw on >${DATA_PASSWORD} ${GATEWAY_ACL}`,
  `user admin on >${ADMIN_PASSWORD} ~* &* +@all`,
  'masteruser admin',
  `masterauth ${ADMIN_PASSWORD}`,
  // A replica syncs at once, not after the 5 s wait for more replicas.
  'repl-diskless-sync-delay 0',
];

export async function startSentinelGroup(t: TestContext): Promise<SentinelGroup> {
  const dir = await tempDir(t, 'portaria-sentinel-');
  const dataPasswordFile = join(dir, 'data-password');
  const sentinelPasswordFile = join(dir, 'sentinel-password');
  await writeFile(dataPasswordFile, `${DATA_PASSWORD}\n`, { mode: 0o600 });
  await writeFile(sentinelPasswordFile, `${SENTINEL_PASSWORD}\n`, { mode: 0o600 });
  const primary = await startRedis(t, { config: DATA_ACL });
  const replica = await startRedis(t, {
    config: [...DATA_ACL, `replicaof 127.0.0.1 ${primary.port}`],
  });
  const replicaClient = createRedisClient(
    redisConfig(replica, { username: 'gw', passwordFile: dataPasswordFile }),
    { role: 'test' },
  );
  t.after(() => replicaClient.disconnect());
  await replicaClient.connect();
  await waitFor(
    'the replica is in sync with the primary',
    async () =>
      /master_link_status:up/.test(String(await replicaClient.info('replication')))
        ? true
        : undefined,
    10_000,
  );
  const sentinel = await startRedis(t, {
    sentinel: true,
    config: [
      `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${primary.port} 1`,
      `sentinel down-after-milliseconds ${MASTER_NAME} 500`,
      `sentinel failover-timeout ${MASTER_NAME} 3000`,
      `sentinel auth-user ${MASTER_NAME} admin`,
      `sentinel auth-pass ${MASTER_NAME} ${ADMIN_PASSWORD}`,
      `requirepass ${SENTINEL_PASSWORD}`,
    ],
  });
  const sentinelClient = createRedisClient(
    redisConfig(sentinel, { passwordFile: sentinelPasswordFile }),
    { role: 'test' },
  );
  t.after(() => sentinelClient.disconnect());
  await sentinelClient.connect();
  await waitFor(
    'the sentinel knows the replica',
    async () => {
      const replicas = (await sentinelClient.call(
        'SENTINEL',
        'REPLICAS',
        MASTER_NAME,
      )) as string[][];
      return replicas.some((fields) => {
        const flags = fields[fields.indexOf('flags') + 1] ?? '';
        return flags === 'slave';
      })
        ? true
        : undefined;
    },
    15_000,
  );
  return {
    primary,
    replica,
    sentinel,
    sentinelClient,
    dataPasswordFile,
    sentinelPasswordFile,
    primaryPort: async () => {
      const [, port] = (await sentinelClient.call(
        'SENTINEL',
        'GET-MASTER-ADDR-BY-NAME',
        MASTER_NAME,
      )) as [string, string];
      return Number(port);
    },
  };
}
