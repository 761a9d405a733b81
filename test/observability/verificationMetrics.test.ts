/**
 * Verification metrics from a real gateway: full verifications by issuer and outcome,
 * their duration, and the token age at first sight (`now − iat`, the clock-skew
 * histogram). Cached verifications are not counted again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { startGateway } from '../helpers/fixture.js';
import { sample, scrape } from '../helpers/metrics.js';

test('full verifications are counted by issuer and outcome, with duration and token age', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const gateway = await startGateway(t, { clock });
  const token = await gateway.token();
  clock.advance(30_000);
  // Another signature of the right length: a full verification that fails.
  const forged = `${token.slice(0, -20)}${token.at(-20) === 'A' ? 'B' : 'A'}${token.slice(-19)}`;
  for (const authorization of [`Bearer ${token}`, `Bearer ${token}`, `Bearer ${forged}`]) {
    const res = await fetch(`${gateway.url}/v1/anything`, { headers: { authorization } });
    await res.arrayBuffer();
  }
  const text = await scrape(gateway.adminUrl);
  const valid = 'portaria_token_verifications_total{issuer="self",outcome="valid"}';
  assert.equal(sample(text, valid), 1, 'the second, cached use is not a full verification');
  const failed = text
    .split('\n')
    .filter((line) => line.startsWith('portaria_token_verifications_total{issuer="self"'))
    .filter((line) => !line.includes('outcome="valid"'));
  assert.equal(failed.length, 1, `one refusal with its reason: ${failed.join(' | ')}`);
  assert.match(failed[0] ?? '', / 1$/);
  assert.equal(sample(text, 'portaria_token_verify_duration_seconds_count{issuer="self"}'), 2);
  assert.equal(sample(text, 'portaria_token_clock_skew_seconds_count{issuer="self"}'), 1);
  assert.equal(sample(text, 'portaria_token_clock_skew_seconds_bucket{le="10",issuer="self"}'), 0);
  assert.equal(sample(text, 'portaria_token_clock_skew_seconds_bucket{le="60",issuer="self"}'), 1);
  assert.equal(sample(text, 'portaria_token_clock_skew_seconds_sum{issuer="self"}'), 30);
});

test('a token whose issuer is not trusted is counted under issuer "unknown"', async (t) => {
  const gateway = await startGateway(t);
  const header = Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'k', typ: 'at+jwt' })).toString(
    'base64url',
  );
  const payload = Buffer.from(JSON.stringify({ iss: 'https://evil.example' })).toString(
    'base64url',
  );
  const res = await fetch(`${gateway.url}/v1/anything`, {
    headers: { authorization: `Bearer ${header}.${payload}.c2ln` },
  });
  assert.equal(res.status, 401);
  await res.arrayBuffer();
  const text = await scrape(gateway.adminUrl);
  assert.equal(
    sample(text, 'portaria_token_verifications_total{issuer="unknown",outcome="unknown-issuer"}'),
    1,
  );
});
