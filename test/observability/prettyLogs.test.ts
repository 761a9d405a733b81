/**
 * `log.pretty` (or PORTARIA_LOG_PRETTY=true): the real gateway process writes pino-pretty's
 * human-readable lines instead of JSON, still without secrets. pino-pretty is a dev
 * dependency; without it start-up fails naming the setting (see the container-image test,
 * which runs a production install).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLIENT_ID, CLIENT_SECRET, TOKEN_PATH } from '../helpers/fixture.js';
import { runGateway, tempDir, waitForStatus, writeGatewayFiles } from '../helpers/process.js';

test('PORTARIA_LOG_PRETTY=true writes human-readable lines, still without secrets', async (t) => {
  const dir = await tempDir(t, 'portaria-pretty-');
  const files = await writeGatewayFiles(dir, [[CLIENT_ID, CLIENT_SECRET, ['orders:read']]], {
    revocation: { store: 'memory' },
    tokenLimits: { perAddress: { enabled: false }, perClient: { enabled: false } },
  });
  const gateway = runGateway(t, ['--config', files.configFile], {
    env: { PORTARIA_LOG_PRETTY: 'true', NO_COLOR: '1' },
  });
  const urls = await gateway.listening();
  await waitForStatus(`${urls.adminUrl}/readyz`, 200, 10_000);
  const res = await fetch(`${urls.publicUrl}${TOKEN_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
  });
  assert.equal(res.status, 200);
  const { token_de_acesso: token } = (await res.json()) as { token_de_acesso: string };
  const text = await gateway.waitForOutput('stdout', /"POST"[\s\S]*200/);
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  assert.ok(lines.length > 0);
  assert.ok(
    lines.some((line) => /\bINFO\b/.test(line) && !line.trimStart().startsWith('{')),
    `expected pretty lines, got: ${lines.slice(0, 3).join(' | ')}`,
  );
  assert.ok(!text.includes(CLIENT_SECRET), 'the client secret reached the pretty log');
  assert.ok(!text.includes(token), 'the token reached the pretty log');
  gateway.child.kill('SIGTERM');
  assert.equal((await gateway.exited).code, 0);
});
