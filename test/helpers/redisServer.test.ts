/**
 * The Redis helper starts a server that is its own: a candidate port another process
 * holds is not mistaken for the new server, the start moves on to another port.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { test } from 'node:test';
import { createRedisClient } from '../../src/redis/redisClient.js';
import { redisConfig } from './redisFixtures.js';
import { startRedis } from './redisServer.js';

async function listenOn(port: number): Promise<Server | null> {
  const server = createServer((socket) => socket.end('-ERR not redis\r\n'));
  return new Promise((resolve) => {
    server.once('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

test('a candidate port held by another process is skipped and the server started answers as Redis', async (t) => {
  // A port in the helper's range that this test holds for the whole start.
  let held: Server | null = null;
  let heldPort = 0;
  for (let port = 21_900; port < 22_000 && held === null; port += 1) {
    held = await listenOn(port);
    heldPort = port;
  }
  assert.ok(held !== null, 'no port to hold');
  t.after(() => held?.close());
  const candidates = [heldPort, heldPort];
  const redis = await startRedis(t, {
    nextPort: () => candidates.shift() ?? 10_000 + Math.floor(Math.random() * 11_000),
  });
  assert.notEqual(redis.port, heldPort);
  const client = createRedisClient(redisConfig(redis), { role: 'test' });
  t.after(() => client.disconnect());
  await client.connect();
  assert.equal(await client.ping(), 'PONG');
});
