/**
 * Per-client metric labels stay bounded: the first `metrics.maxClientLabels` clients that
 * get tokens have their own series, later ones share `client="_other"`, and a client id
 * that never authenticated (chosen by the caller) never becomes a label.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLIENT_ID, startGateway, TOKEN_PATH } from '../helpers/fixture.js';
import { sample, scrape } from '../helpers/metrics.js';

const READER = ['reader', 'reader-secret-0123456789abcdefghijklmnopq'] as const;

test('tokens issued by client: own series up to maxClientLabels, then _other', async (t) => {
  const gateway = await startGateway(t, {
    settings: () => ({ metrics: { maxClientLabels: 1 } }),
  });
  await gateway.token();
  await gateway.token();
  await gateway.token(...READER);
  const refused = await fetch(`${gateway.url}${TOKEN_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: 'made-up-client', clientSecret: 'whatever-secret' }),
  });
  assert.equal(refused.status, 401);
  await refused.arrayBuffer();
  const text = await scrape(gateway.adminUrl);
  const series = 'portaria_tokens_issued_by_client_total';
  assert.equal(sample(text, `${series}{client="${CLIENT_ID}"}`), 2);
  assert.equal(sample(text, `${series}{client="_other"}`), 1);
  assert.equal(sample(text, `${series}{client="reader"}`), undefined);
  assert.ok(!text.includes('made-up-client'));
});

test('maxClientLabels 0 turns the per-client metric off', async (t) => {
  const gateway = await startGateway(t, {
    settings: () => ({ metrics: { maxClientLabels: 0 } }),
  });
  await gateway.token();
  const text = await scrape(gateway.adminUrl);
  assert.ok(!text.includes('portaria_tokens_issued_by_client_total'));
});
