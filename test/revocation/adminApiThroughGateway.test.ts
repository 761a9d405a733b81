import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import { createApp } from '../../src/app/createApp.js';
import { ConfigError } from '../../src/config/configError.js';
import { ManualClock } from '../../src/lib/clock.js';
import { CLIENT_SECRET, startGateway } from '../helpers/fixture.js';
import { ecKey, jwksOf } from '../helpers/jwksServer.js';
import { signWith } from '../helpers/tokens.js';

const ADMIN_TOKEN = 'admin-token-0123456789abcdefghijklmn';

async function tokenFile(
  t: { after(fn: () => Promise<void>): void },
  content: string,
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-admin-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'admin-token');
  await writeFile(file, content, { mode: 0o600 });
  return file;
}

test('a token revoked through the admin API is refused on the public port, listed and counted', async (t) => {
  const file = await tokenFile(t, `${ADMIN_TOKEN}\n`);
  const gw = await startGateway(t, {
    settings: () => ({ admin: { host: '127.0.0.1', port: 0, tokenFile: file } }),
  });
  const token = await gw.token();
  const other = await gw.token();
  const jti = decodeJwt(token).jti as string;
  const call = (bearer: string) =>
    fetch(`${gw.url}/v1/orders/1`, { headers: { authorization: `Bearer ${bearer}` } });
  assert.equal((await call(token)).status, 200);

  const unauthorized = await fetch(`${gw.adminUrl}/admin/v1/revocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer wrong-token-0123456789' },
    body: JSON.stringify({ jti }),
  });
  assert.equal(unauthorized.status, 401);
  assert.equal((await call(token)).status, 200, 'nothing revoked by an unauthorized call');

  const res = await fetch(`${gw.adminUrl}/admin/v1/revocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ jti }),
  });
  assert.equal(res.status, 201);
  const refused = await call(token);
  assert.equal(refused.status, 401);
  assert.equal(
    ((await refused.json()) as { tipo: string }).tipo,
    'urn:portaria:problem:token-revoked',
  );
  assert.equal((await call(other)).status, 200);

  const list = (await (
    await fetch(`${gw.adminUrl}/admin/v1/revocations`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    })
  ).json()) as { tokens: { jti: string }[] };
  assert.deepEqual(
    list.tokens.map((e) => e.jti),
    [jti],
  );
  const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
  assert.match(metrics, /portaria_revocations_total\{kind="token"\} 1/);
  assert.match(metrics, /portaria_revocation_entries 1/);
  assert.equal(
    gw.logs.some((line) => line.includes(ADMIN_TOKEN)),
    false,
    'the admin token is never logged',
  );
  // The audit trail: the refused caller and the stored revocation, never a token.
  const lines = gw.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
  const refusedLine = lines.find((l) => l.msg === 'admin token refused');
  assert.equal(refusedLine?.level, 'warn');
  assert.equal(refusedLine?.reason, 'admin-token-invalid');
  assert.equal(refusedLine?.from, '127.0.0.1');
  const stored = lines.find((l) => l.msg === 'revocation stored');
  assert.equal(stored?.kind, 'token');
  assert.equal(stored?.jti, jti);
  assert.equal(typeof stored?.expiresAt, 'number');
  assert.ok(!gw.logs.some((line) => line.includes('wrong-token-0123456789')));

  // Not reachable through the public port.
  const viaPublic = await fetch(`${gw.url}/admin/v1/revocations`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  assert.notEqual(viaPublic.status, 200);
});

test('without admin.tokenFile the admin API is off (404)', async (t) => {
  const gw = await startGateway(t);
  const res = await fetch(`${gw.adminUrl}/admin/v1/revocations`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  assert.equal(res.status, 404);
});

test('an admin token file that is too short stops the start with the setting named', async (t) => {
  const file = await tokenFile(t, 'short\n');
  const gw = await startGateway(t);
  await assert.rejects(
    createApp({ config: { ...gw.config, admin: { ...gw.config.admin, tokenFile: file } } }),
    (error: unknown) =>
      error instanceof ConfigError &&
      /^admin\.tokenFile: .* at least 16 visible ASCII/.test(error.problems[0] ?? ''),
  );
});

test('external issuers: maxLifetimeSeconds bounds their tokens and the life of revocation entries', async (t) => {
  const file = await tokenFile(t, `${ADMIN_TOKEN}\n`);
  const dir = await mkdtemp(join(tmpdir(), 'portaria-issuer-life-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const key = ecKey('partner-1');
  await writeFile(join(dir, 'partner.jwks.json'), JSON.stringify(jwksOf(key)));
  const clock = new ManualClock(Date.UTC(2026, 2, 1));
  const DAY = 86_400;
  const gw = await startGateway(t, {
    clock,
    settings: () => ({
      admin: { host: '127.0.0.1', port: 0, tokenFile: file },
      issuers: [
        {
          id: 'partner',
          issuer: 'https://idp.partner.test',
          audiences: ['partner-api'],
          keyFile: join(dir, 'partner.jwks.json'),
          algorithms: ['ES256'],
          clockSkewSeconds: 300,
          maxLifetimeSeconds: 7 * DAY,
        },
      ],
    }),
  });
  const now = Math.floor(clock.now() / 1000);
  const partnerToken = (jti: string, lifetime: number, iat = now) =>
    signWith(
      key.privateKey,
      'ES256',
      {
        iss: 'https://idp.partner.test',
        aud: 'partner-api',
        sub: 'svc',
        client_id: 'svc',
        iat,
        exp: iat + lifetime,
        jti,
      },
      { kid: key.kid },
    );
  const call = async (bearer: string) => {
    const res = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${bearer}` },
    });
    await res.arrayBuffer();
    return res.status;
  };
  const revoke = async (body: Record<string, unknown>) => {
    const res = await fetch(`${gw.adminUrl}/admin/v1/revocations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  assert.equal(await call(await partnerToken('six-days', 6 * DAY)), 200);
  assert.equal(await call(await partnerToken('eight-days', 8 * DAY)), 401, 'over its maximum');

  // An entry of unknown expiry outlives the issuer's longest token and largest skew, also
  // for a token stamped by its clock running ahead by the skew (iat = now + 300).
  const byJti = await revoke({ jti: 'six-days' });
  assert.equal(byJti.status, 201);
  assert.equal(byJti.body.expiresAt, now + 7 * DAY + 2 * 300);
  const aheadWeek = await partnerToken('ahead-week', 7 * DAY, now + 300);
  assert.equal(await call(aheadWeek), 200);
  assert.equal((await revoke({ jti: 'ahead-week' })).status, 201);
  const start = clock.now();
  clock.advance((7 * DAY + 2 * 300 - 1) * 1000);
  assert.equal(await call(aheadWeek), 401, 'still revoked in the last second it is accepted');
  clock.set(start);
  // The token's real exp is accepted (was refused as beyond our own 24 h).
  const withExp = await revoke({ jti: 'six-days-b', expiresAt: now + 6 * DAY });
  assert.equal(withExp.status, 201);
  assert.equal(withExp.body.expiresAt, now + 6 * DAY + 300);
  // A client cut-off defaults to now + the largest skew: a token signed by a clock running
  // ahead (iat up to the skew later) is covered too.
  const byClient = await revoke({ clientId: 'svc' });
  assert.equal(byClient.status, 201);
  assert.equal(byClient.body.issuedBefore, now + 300);
  assert.equal(byClient.body.expiresAt, now + 300 + 7 * DAY + 300);
  const ahead = await partnerToken('ahead', 3600, now + 200);
  const refused = await fetch(`${gw.url}/v1/orders/1`, {
    headers: { authorization: `Bearer ${ahead}` },
  });
  assert.equal(refused.status, 401);
  assert.equal(
    ((await refused.json()) as { tipo: string }).tipo,
    'urn:portaria:problem:token-revoked',
  );
});

test('while a client revocation cut-off lies ahead, the token operation answers 503 with Retry-After, not a dead token', async (t) => {
  const file = await tokenFile(t, `${ADMIN_TOKEN}\n`);
  const clock = new ManualClock(Date.UTC(2026, 2, 1));
  const gw = await startGateway(t, {
    clock,
    settings: () => ({ admin: { host: '127.0.0.1', port: 0, tokenFile: file } }),
  });
  const before = await gw.token();
  const revoked = await fetch(`${gw.adminUrl}/admin/v1/revocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ clientId: 'acme' }),
  });
  assert.equal(revoked.status, 201);
  // The default cut-off is now + the clock skew (60 s).
  const now = Math.floor(clock.now() / 1000);
  assert.equal(((await revoked.json()) as { issuedBefore: number }).issuedBefore, now + 60);
  const requestToken = () =>
    fetch(`${gw.url}/v1/authentication/accesstoken`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: 'acme', clientSecret: CLIENT_SECRET }),
    });
  const pending = await requestToken();
  assert.equal(pending.status, 503);
  assert.equal(pending.headers.get('retry-after'), '61');
  assert.equal(
    ((await pending.json()) as { tipo: string }).tipo,
    'urn:portaria:problem:service-unavailable',
  );
  clock.advance(30_000);
  const later = await requestToken();
  assert.equal(later.headers.get('retry-after'), '31');
  await later.arrayBuffer();
  // Once the cut-off has passed, new tokens are issued and accepted; older ones stay revoked.
  clock.advance(31_000);
  const fresh = await gw.token();
  const call = async (bearer: string) => {
    const res = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${bearer}` },
    });
    await res.arrayBuffer();
    return res.status;
  };
  assert.equal(await call(fresh), 200);
  assert.equal(await call(before), 401);
  const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
  assert.match(metrics, /portaria_token_requests_total\{outcome="unavailable"\} 2/);
});
