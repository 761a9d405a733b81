/**
 * A signing-key rotation walked through the running gateway with a ManualClock:
 * `rotateKeys` on the keys directory, `app.reload()`, then the clock moved to each
 * boundary of the schedule (publish, activate, the last token's expiry, remove). At every
 * step the published JWKS, the signer of new tokens, the verification of earlier tokens
 * (through the gateway, the verified-token cache off), the key-state gauges and
 * readiness are checked.
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { rotateKeys } from '../../src/keys/rotateKeys.js';
import { ManualClock } from '../../src/lib/clock.js';
import { type Gateway, startGateway } from '../helpers/fixture.js';
import { sample, scrape } from '../helpers/metrics.js';
import { signWithGatewayKey, validClaims } from '../helpers/tokens.js';

const SECOND = 1000;
const T0 = Date.UTC(2026, 3, 1, 12);
const MAX_AGE_S = 300;
const SKEW_S = 60;
const LIFETIME_S = 3600;

async function publishedKids(gw: Gateway): Promise<string[]> {
  const res = await fetch(`${gw.url}/.well-known/jwks.json`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('cache-control'), `public, max-age=${MAX_AGE_S}`);
  const body = (await res.json()) as { keys: { kid: string }[] };
  return body.keys.map((k) => k.kid).sort();
}

async function signerOf(gw: Gateway): Promise<{ token: string; kid: string }> {
  const token = await gw.token();
  return { token, kid: decodeProtectedHeader(token).kid as string };
}

async function statusWith(gw: Gateway, token: string): Promise<number> {
  const res = await fetch(`${gw.url}/v1/orders/1`, {
    headers: { authorization: `Bearer ${token}` },
  });
  await res.arrayBuffer();
  return res.status;
}

async function keyStates(gw: Gateway): Promise<Record<string, number | undefined>> {
  const text = await scrape(gw.adminUrl);
  const states: Record<string, number | undefined> = {};
  for (const state of ['pending', 'active', 'retiring', 'retired']) {
    states[state] = sample(text, `portaria_signing_keys{state="${state}"}`);
  }
  return states;
}

async function activeAge(gw: Gateway): Promise<number | undefined> {
  return sample(await scrape(gw.adminUrl), 'portaria_signing_key_active_age_seconds');
}

async function readyz(gw: Gateway): Promise<number> {
  const res = await fetch(`${gw.adminUrl}/readyz`);
  await res.arrayBuffer();
  return res.status;
}

/** A gateway with the rotation timing above; reloads only on `app.reload()`. */
function rotationGateway(
  t: TestContext,
  clock: ManualClock,
  verify: Record<string, unknown> = {},
): Promise<Gateway> {
  return startGateway(t, {
    clock,
    settings: () => ({
      clockSkewSeconds: SKEW_S,
      keys: { dir: 'keys', jwksMaxAgeSeconds: MAX_AGE_S },
      token: { lifetimeSeconds: LIFETIME_S },
      verify,
      reload: { enabled: false },
    }),
  });
}

describe('signing-key rotation at the running gateway', () => {
  test('a cached token stops working within a second of its key leaving the published set', async (t) => {
    // A rotation whose --max-lifetime (60 s) is shorter than the tokens' (1 h): the old key
    // is removed while its tokens are unexpired and cached. Nothing reloads at that moment:
    // only the clock passes removeAt.
    const clock = new ManualClock(T0);
    const gw = await rotationGateway(t, clock);
    const token = await gw.token();
    const rotation = await rotateKeys(gw.config.keys.dir, {
      algorithm: 'ES256',
      now: new Date(clock.now()),
      jwksMaxAgeSeconds: MAX_AGE_S,
      clockSkewSeconds: SKEW_S,
      maxLifetimeSeconds: 60,
    });
    await gw.app.reload();
    assert.equal(await statusWith(gw, token), 200); // verified again, cached
    const removeAt = rotation.retiring[0]?.schedule.removeAt as number;
    clock.set(removeAt - SECOND);
    await sleep(1200);
    assert.equal(await statusWith(gw, token), 200, 'still published: still served');
    clock.set(removeAt);
    await sleep(1200); // the gateway looks at its published set every second
    assert.equal(await statusWith(gw, token), 401);
  });

  test('publish ahead, hand over at activateAt, keep the old key until its last token expired', async (t) => {
    const clock = new ManualClock(T0);
    // Every request verifies the signature: nothing is answered from the cache.
    const gw = await rotationGateway(t, clock, { cacheSize: 0 });
    const oldKid = gw.keyRing.signingKey.kid;
    assert.deepEqual(await publishedKids(gw), [oldKid]);
    assert.deepEqual(await keyStates(gw), { pending: 0, active: 1, retiring: 0, retired: 0 });

    const rotation = await rotateKeys(gw.config.keys.dir, {
      algorithm: 'ES256',
      now: new Date(clock.now()),
      jwksMaxAgeSeconds: MAX_AGE_S,
      clockSkewSeconds: SKEW_S,
      maxLifetimeSeconds: LIFETIME_S,
    });
    const newKid = rotation.added.kid;
    const activateAt = T0 + (MAX_AGE_S + SKEW_S) * SECOND;
    const removeAt = activateAt + (LIFETIME_S + SKEW_S) * SECOND;
    assert.equal(rotation.added.schedule.activateAt, activateAt);
    assert.equal(rotation.retiring[0]?.kid, oldKid);
    assert.equal(rotation.retiring[0]?.schedule.removeAt, removeAt);
    await gw.app.reload();

    // Published at once, not signing yet.
    assert.deepEqual(await publishedKids(gw), [newKid, oldKid].sort());
    assert.deepEqual(await keyStates(gw), { pending: 1, active: 1, retiring: 0, retired: 0 });
    const first = await signerOf(gw);
    assert.equal(first.kid, oldKid);
    assert.equal(await statusWith(gw, first.token), 200);
    assert.equal(await readyz(gw), 200);

    // The last moment of the old key: the token it signs now lives the longest.
    clock.set(activateAt - 1);
    const last = await signerOf(gw);
    assert.equal(last.kid, oldKid);
    assert.equal(await statusWith(gw, last.token), 200);
    assert.deepEqual(await keyStates(gw), { pending: 1, active: 1, retiring: 0, retired: 0 });

    clock.set(activateAt);
    const handedOver = await signerOf(gw);
    assert.equal(handedOver.kid, newKid);
    assert.equal(await statusWith(gw, handedOver.token), 200);
    assert.deepEqual(await keyStates(gw), { pending: 0, active: 1, retiring: 1, retired: 0 });
    assert.equal(await activeAge(gw), 0);
    assert.equal(await statusWith(gw, last.token), 200, 'the old key still verifies');
    assert.equal(await statusWith(gw, first.token), 200);
    assert.deepEqual(await publishedKids(gw), [newKid, oldKid].sort());
    assert.equal(await readyz(gw), 200);

    // Up to the last second of the old key's last token: still verified.
    const lastExp = decodeJwt(last.token).exp as number;
    assert.ok(lastExp * SECOND < removeAt, 'the old key outlives its last token');
    clock.set(lastExp * SECOND - SECOND);
    assert.equal(await statusWith(gw, last.token), 200);
    assert.equal(await activeAge(gw), (clock.now() - activateAt) / SECOND);
    assert.equal((await signerOf(gw)).kid, newKid);
    assert.equal(await readyz(gw), 200);

    clock.set(removeAt - 1);
    assert.deepEqual(await publishedKids(gw), [newKid, oldKid].sort());
    assert.deepEqual(await keyStates(gw), { pending: 0, active: 1, retiring: 1, retired: 0 });

    clock.set(removeAt);
    assert.deepEqual(await publishedKids(gw), [newKid]);
    assert.deepEqual(await keyStates(gw), { pending: 0, active: 1, retiring: 0, retired: 1 });
    const after = await signerOf(gw);
    assert.equal(after.kid, newKid);
    assert.equal(await statusWith(gw, after.token), 200);
    assert.equal(await readyz(gw), 200);
    // The removed key verifies nothing any more, even a token with valid times.
    const now = Math.floor(clock.now() / SECOND);
    const late = await signWithGatewayKey(
      gw,
      validClaims(gw, { iat: now, nbf: now, exp: now + 600 }),
    );
    assert.equal(decodeProtectedHeader(late).kid, oldKid);
    assert.equal(await statusWith(gw, late), 401);
  });

  test('the active-key age gauge claims no age for a key that signs "since forever"', async (t) => {
    const clock = new ManualClock(T0);
    const gw = await startGateway(t, { clock, settings: () => ({ reload: { enabled: false } }) });
    // A key without a schedule entry: its activation time is unknown.
    assert.ok([undefined, 0].includes(await activeAge(gw)));
    await rotateKeys(gw.config.keys.dir, {
      algorithm: 'ES256',
      now: new Date(clock.now()),
      jwksMaxAgeSeconds: MAX_AGE_S,
      clockSkewSeconds: SKEW_S,
      maxLifetimeSeconds: LIFETIME_S,
    });
    await gw.app.reload();
    // The rotation gave that key an entry at the epoch, which means "since forever" (see
    // rotateKeys.ts), not "activated in 1970": no age of ~56 years.
    const pendingAge = await activeAge(gw);
    assert.ok(
      [undefined, 0].includes(pendingAge),
      `active key age while the new key is pending: ${pendingAge} s`,
    );
    clock.set(T0 + (MAX_AGE_S + SKEW_S + 10) * SECOND);
    assert.equal(await activeAge(gw), 10);
  });
});

describe('a rotation that reaches the gateway late', () => {
  const late = 'signing key published late';
  const rotateAtT0 = (gw: Gateway) =>
    rotateKeys(`${gw.dir}/keys`, {
      algorithm: 'ES256',
      now: new Date(T0),
      jwksMaxAgeSeconds: MAX_AGE_S,
      clockSkewSeconds: SKEW_S,
      maxLifetimeSeconds: LIFETIME_S,
    });

  test('loaded when rotated: no warning', async (t) => {
    const clock = new ManualClock(T0);
    const gw = await rotationGateway(t, clock);
    await rotateAtT0(gw);
    await gw.app.reload();
    assert.ok(!gw.logs.some((line) => line.includes(late)));
  });

  test('loaded with less than the JWKS max-age left before it signs: a warning names the key', async (t) => {
    const clock = new ManualClock(T0);
    const gw = await rotationGateway(t, clock);
    const { added } = await rotateAtT0(gw);
    // It activates at T0 + 360 s; loaded at T0 + 200 s, a JWKS cached just before is
    // kept until T0 + 500 s.
    clock.set(T0 + 200 * SECOND);
    await gw.app.reload();
    const line = gw.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg?.toString().startsWith(late));
    assert.ok(line, gw.logs.join('\n'));
    assert.equal(line.level, 'warn');
    assert.equal(line.kid, added.kid);
    assert.equal(line.activateAt, new Date(T0 + 360 * SECOND).toISOString());
  });
});
