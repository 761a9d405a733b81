import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import { createApp } from '../../src/app/createApp.js';
import { startGateway } from '../helpers/fixture.js';

const quiet = () =>
  new Writable({
    write(_chunk, _encoding, callback) {
      callback();
    },
  });

test('a revocation made before a restart is still enforced after it (local store)', async (t) => {
  const gw = await startGateway(t);
  assert.equal(gw.config.revocation.store, 'local');
  const revoked = await gw.token();
  const kept = await gw.token();
  await gw.app.revoke(decodeJwt(revoked).jti as string);
  await gw.app.shutdown();

  const again = await createApp({ config: gw.config, logDestination: quiet() });
  const { publicUrl } = await again.listen();
  t.after(() => again.shutdown());
  const call = (token: string) =>
    fetch(`${publicUrl}/v1/orders/1`, { headers: { authorization: `Bearer ${token}` } });
  const refused = await call(revoked);
  assert.equal(refused.status, 401);
  assert.equal(
    ((await refused.json()) as { tipo: string }).tipo,
    'urn:portaria:problem:token-revoked',
  );
  assert.equal((await call(kept)).status, 200);
});

test('the memory store forgets revocations on restart (why it is not the default)', async (t) => {
  const gw = await startGateway(t, { settings: () => ({ revocation: { store: 'memory' } }) });
  const token = await gw.token();
  await gw.app.revoke(decodeJwt(token).jti as string);
  await gw.app.shutdown();
  const again = await createApp({ config: gw.config, logDestination: quiet() });
  const { publicUrl } = await again.listen();
  t.after(() => again.shutdown());
  const res = await fetch(`${publicUrl}/v1/orders/1`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(res.status, 200);
});
