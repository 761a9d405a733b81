/**
 * The README's quick start, as a newcomer runs it: `node dist/main.js --demo` in a fresh
 * directory (PORTARIA_SERVER__PORT / PORTARIA_ADMIN__PORT 0: the demo takes free ports and prints
 * them, so no port is found free and bound later by another test file), the printed secret, then
 * the printed walkthrough — token, a call through the gateway, a refusal without a token,
 * a refusal for a missing scope — and a second run that keeps the data and the secret.
 */
import assert from 'node:assert/strict';
import { access, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import { problemOf, TOKEN_PATH } from '../helpers/fixture.js';
import { runGateway } from '../helpers/process.js';

const READY = /Stop with Ctrl-C\./;

/** Both listeners on port 0: the demo picks its ports. */
const ANY_PORTS = { PORTARIA_SERVER__PORT: '0', PORTARIA_ADMIN__PORT: '0' };

async function startDemo(t: TestContext, cwd: string) {
  const proc = runGateway(t, ['--demo'], { cwd, env: ANY_PORTS });
  // A loaded CI machine takes seconds to start the demo (its first key and client).
  const stderr = await proc.waitForOutput('stderr', READY, 20_000);
  return { proc, stderr, ...printedUrls(stderr) };
}

/** The URLs the walkthrough prints (`Gateway:  http://…`, `Admin:    http://…`). */
function printedUrls(stderr: string): { publicUrl: string; adminUrl: string } {
  const publicUrl = /^ {2}Gateway: +(http:\/\/\S+)$/m.exec(stderr)?.[1];
  const adminUrl = /^ {2}Admin: +(http:\/\/\S+)/m.exec(stderr)?.[1];
  assert.ok(publicUrl !== undefined && adminUrl !== undefined, stderr);
  return { publicUrl, adminUrl };
}

async function tokenFor(publicUrl: string, clientSecret: string) {
  const res = await fetch(publicUrl + TOKEN_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: 'demo', clientSecret }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function stop(proc: ReturnType<typeof runGateway>) {
  proc.child.kill('SIGTERM');
  const { code, signal } = await proc.exited;
  assert.equal(signal, null);
  assert.equal(code, 0);
}

describe('the quick start (npm start → --demo)', () => {
  let cwd = '';
  let firstSecret = '';
  before(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'portaria-quickstart-'));
  });
  after(() => rm(cwd, { recursive: true, force: true }));

  test('a first run creates .portaria-demo/, prints the secret once and the walkthrough works', async (t) => {
    const demo = await startDemo(t, cwd);
    // Port 0 from the environment: not the defaults 8080 and 9091.
    assert.notEqual(new URL(demo.publicUrl).port, '8080', 'PORTARIA_SERVER__PORT is honoured');
    assert.notEqual(new URL(demo.adminUrl).port, '9091', 'PORTARIA_ADMIN__PORT is honoured');
    const match = /clientSecret: (\S+)/.exec(demo.stderr);
    assert.ok(match, 'the secret is printed');
    firstSecret = match[1] as string;
    assert.ok(demo.stderr.includes(`${demo.publicUrl}/v1/orders/42`));

    // 1. Get an access token.
    const issued = await tokenFor(demo.publicUrl, firstSecret);
    assert.equal(issued.status, 200);
    assert.equal(issued.body.tipo_de_token, 'Bearer');
    assert.equal(issued.body.escopo, 'orders:read orders:write');
    const token = issued.body.token_de_acesso as string;

    // 2. Call the API through the gateway: the demo upstream echoes what it received.
    const called = await fetch(`${demo.publicUrl}/v1/orders/42`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(called.status, 200);
    const echo = (await called.json()) as Record<string, unknown>;
    assert.equal(echo.clientId, 'demo');
    assert.equal(echo.path, '/v1/orders/42');
    assert.equal(echo.method, 'GET');
    assert.equal(echo.scope, 'orders:read orders:write');
    assert.equal(echo.requestId, called.headers.get('x-request-id'));

    // 3. No token: 401 problem details.
    const anonymous = await fetch(`${demo.publicUrl}/v1/orders/42`);
    assert.equal(anonymous.status, 401);
    // RFC 9728 §5.1: the metadata URL names the address the demo listens on, 127.0.0.1.
    assert.match(
      anonymous.headers.get('www-authenticate') ?? '',
      /resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/v1\/orders"/,
    );
    assert.equal((await problemOf(anonymous)).tipo, 'urn:portaria:problem:token-missing');

    // 4. A route needing a scope the demo client lacks: 403.
    const reports = await fetch(`${demo.publicUrl}/v1/reports`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(reports.status, 403);
    assert.equal((await problemOf(reports)).tipo, 'urn:portaria:problem:insufficient-scope');

    const ready = await fetch(`${demo.adminUrl}/readyz`);
    assert.equal(ready.status, 200);
    await ready.arrayBuffer();

    const keys = await readdir(join(cwd, '.portaria-demo', 'keys'));
    assert.ok(keys.length > 0, 'a signing key was written');
    const clients = await readFile(join(cwd, '.portaria-demo', 'clients.json'), 'utf8');
    assert.match(clients, /"demo"/);
    assert.ok(!clients.includes(firstSecret), 'only a hash of the secret is stored');
    await stop(demo.proc);
  });

  test('a second run in the same directory prints no secret, and the first secret still works', async (t) => {
    assert.notEqual(firstSecret, '', 'the first run printed a secret');
    const keysBefore = await readdir(join(cwd, '.portaria-demo', 'keys'));
    const demo = await startDemo(t, cwd);
    assert.doesNotMatch(demo.stderr, /clientSecret:/);
    assert.ok(!demo.stderr.includes(firstSecret));
    assert.match(demo.stderr, /printed on the first run/);
    const issued = await tokenFor(demo.publicUrl, firstSecret);
    assert.equal(issued.status, 200);
    const called = await fetch(`${demo.publicUrl}/v1/orders/42`, {
      headers: { authorization: `Bearer ${issued.body.token_de_acesso as string}` },
    });
    assert.equal(called.status, 200);
    assert.equal(((await called.json()) as { clientId: string }).clientId, 'demo');
    assert.deepEqual(await readdir(join(cwd, '.portaria-demo', 'keys')), keysBefore);
    await stop(demo.proc);
  });
});

test('a first run that cannot listen (port in use) leaves no unseen demo secret behind', async (t) => {
  const cwd = await mkdtemp(join(tmpdir(), 'portaria-quickstart-busy-'));
  t.after(() => rm(cwd, { recursive: true, force: true }));
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => busy.close(() => resolve())));
  const busyPort = (busy.address() as AddressInfo).port;
  const failed = runGateway(t, ['--demo'], {
    cwd,
    env: { PORTARIA_SERVER__PORT: String(busyPort), PORTARIA_ADMIN__PORT: '0' },
  });
  const { code } = await failed.exited;
  assert.equal(code, 1);
  assert.match(
    failed.stderr(),
    new RegExp(
      `server\\.host/server\\.port: cannot listen on 127\\.0\\.0\\.1:${busyPort}: the address is already in use .*\\(EADDRINUSE\\); change server\\.port \\(PORTARIA_SERVER__PORT\\)`,
    ),
  );
  assert.doesNotMatch(failed.stderr(), /failed to start|\n\s+at /, 'no stack trace');
  assert.doesNotMatch(failed.stderr(), /clientSecret:/, 'nothing printed');

  // The next start creates the demo client afresh and shows its secret.
  const demo = await startDemo(t, cwd);
  const secret = /clientSecret: (\S+)/.exec(demo.stderr)?.[1];
  assert.ok(secret, demo.stderr);
  assert.equal((await tokenFor(demo.publicUrl, secret)).status, 200);
  await stop(demo.proc);
});

test('a stop signal after the demo client is created but before its secret is shown leaves no unseen secret', async (t) => {
  const cwd = await mkdtemp(join(tmpdir(), 'portaria-quickstart-stopped-'));
  t.after(() => rm(cwd, { recursive: true, force: true }));
  const clientsFile = join(cwd, '.portaria-demo', 'clients.json');
  const starting = runGateway(t, ['--demo'], { cwd, env: ANY_PORTS });
  // SIGTERM as soon as the demo client exists: the gateway is still starting (loading
  // keys, building the app), its secret not yet printed.
  for (;;) {
    if (
      await access(clientsFile).then(
        () => true,
        () => false,
      )
    )
      break;
    if (starting.child.exitCode !== null) assert.fail(`exited early: ${starting.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  starting.child.kill('SIGTERM');
  await starting.exited;
  const shown = /clientSecret: (\S+)/.exec(starting.stderr())?.[1];
  if (shown === undefined) {
    // Not shown: the client must be gone, so that the next start shows a new secret.
    await assert.rejects(access(clientsFile), { code: 'ENOENT' });
  }
  const demo = await startDemo(t, cwd);
  const secret = /clientSecret: (\S+)/.exec(demo.stderr)?.[1] ?? shown;
  assert.ok(secret, 'a usable demo secret was shown by one of the two runs');
  assert.equal((await tokenFor(demo.publicUrl, secret)).status, 200);
  await stop(demo.proc);
});

test('damaged demo data is reported with the way out: delete .portaria-demo', async (t) => {
  const cwd = await mkdtemp(join(tmpdir(), 'portaria-quickstart-damaged-'));
  t.after(() => rm(cwd, { recursive: true, force: true }));
  const first = await startDemo(t, cwd);
  await stop(first.proc);
  await writeFile(join(cwd, '.portaria-demo', 'clients.json'), '{"clients": [');
  const damaged = runGateway(t, ['--demo'], { cwd, env: ANY_PORTS });
  const { code } = await damaged.exited;
  assert.equal(code, 1);
  assert.match(damaged.stderr(), /clients\.json/);
  assert.match(
    damaged.stderr(),
    /delete the \.portaria-demo directory to start with fresh demo data/,
  );
  // And that is the way out.
  await rm(join(cwd, '.portaria-demo'), { recursive: true });
  const fresh = await startDemo(t, cwd);
  assert.match(fresh.stderr, /clientSecret: \S+/);
  await stop(fresh.proc);
});
