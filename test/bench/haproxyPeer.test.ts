import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createBenchKey, mintToken } from '../../bench/lib/benchKey.js';
import { spawnChild } from '../../bench/lib/spawnChild.js';
import { startHaproxy } from '../../bench/peers/haproxy.js';

const PATH = '/v1/orders/42';

test('the HAProxy peer forwards a valid token and refuses a tampered one', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-haproxy-peer-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const upstream = await spawnChild<{ url: string }>(
    'upstream',
    new URL('../../bench/upstream.js', import.meta.url),
    [],
  );
  t.after(() => upstream.stop());
  const key = await createBenchKey(dir);
  // startHaproxy itself refuses to return a peer that lets a bad token through.
  const haproxy = await startHaproxy(dir, upstream.info.url, key, PATH);
  t.after(() => haproxy.stop());

  const token = mintToken(key);
  const send = async (bearer: string) => {
    const res = await fetch(haproxy.url + PATH, { headers: { authorization: `Bearer ${bearer}` } });
    return { status: res.status, body: await res.text() };
  };
  const ok = await send(token);
  assert.equal(ok.status, 200);
  assert.match(ok.body, /"status":"shipped"/);
  // The same claims with one signature byte changed.
  const last = token.at(-2) === 'A' ? 'B' : 'A';
  const tampered = `${token.slice(0, -2)}${last}${token.slice(-1)}`;
  assert.equal((await send(tampered)).status, 401);
});
