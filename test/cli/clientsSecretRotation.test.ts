import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { loadClientRegistry } from '../../src/clients/clientRegistry.js';
import type { ClientsFileData } from '../../src/clients/clientsFile.js';
import { verifySecret } from '../../src/clients/secretHash.js';
import { runCli, tempDir } from '../helpers/runCli.js';

const SECRET_LINE = /^client secret: ([A-Za-z0-9_-]{43})$/m;

async function withClient(
  t: TestContext,
  extra: readonly string[] = [],
  input?: string,
): Promise<{ cwd: string; file: string }> {
  const cwd = await tempDir(t);
  const file = join(cwd, 'clients.json');
  const added = await runCli(
    ['clients', 'add', 'acme', '--scopes', 'orders:read', '--clients-file', file, ...extra],
    input === undefined ? { cwd } : { cwd, input },
  );
  assert.equal(added.code, 0, added.stderr);
  return { cwd, file };
}

async function stored(file: string): Promise<ClientsFileData> {
  return JSON.parse(await readFile(file, 'utf8')) as ClientsFileData;
}

function rotate(cwd: string, file: string, now: string, ...extra: string[]) {
  return runCli(
    ['clients', 'rotate-secret', 'acme', '--now', now, '--clients-file', file, ...extra],
    { cwd },
  );
}

describe('portaria clients rotate-secret', () => {
  test('prints a new secret once, stores its hash, and keeps the old one for the overlap', async (t) => {
    const { cwd, file } = await withClient(t);
    const [before] = (await stored(file)).clients[0]?.secrets ?? [];
    const result = await rotate(cwd, file, '2026-03-01T00:00:00Z', '--overlap', '24h');
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    const secret = SECRET_LINE.exec(result.stdout)?.[1];
    assert.ok(secret, result.stdout);
    assert.equal(
      result.stdout,
      `Rotated the secret of client "acme" in ${file}.\n` +
        'client id:     acme\n' +
        `client secret: ${secret}\n` +
        'Store the secret now: it cannot be shown again (only its hash is kept).\n' +
        'The previous secret works until 2026-03-02T00:00:00Z.\n',
    );
    const text = await readFile(file, 'utf8');
    assert.equal(text.includes(secret), false, 'the secret itself is never stored');
    const [old, fresh] = (await stored(file)).clients[0]?.secrets ?? [];
    assert.deepEqual(old, { hash: before?.hash, expiresAt: '2026-03-02T00:00:00Z' });
    assert.deepEqual(Object.keys(fresh ?? {}), ['hash'], 'the new secret does not expire');
    const acme = (await loadClientRegistry(file)).get('acme');
    assert.equal(acme?.secrets[1]?.hash.scheme, 'sha256');
    assert.equal(await verifySecret(secret, acme?.secrets[1]?.hash ?? assert.fail()), true);
  });

  test('defaults to a 24 hour overlap and accepts minutes, days and seconds', async (t) => {
    const cases: [string[], string][] = [
      [[], '2026-03-02T00:00:00Z'],
      [['--overlap', '30m'], '2026-03-01T00:30:00Z'],
      [['--overlap', '7d'], '2026-03-08T00:00:00Z'],
      [['--overlap', '90'], '2026-03-01T00:01:30Z'],
    ];
    for (const [extra, expiresAt] of cases) {
      const { cwd, file } = await withClient(t);
      const result = await rotate(cwd, file, '2026-03-01T00:00:00Z', ...extra);
      assert.equal(result.code, 0, result.stderr);
      assert.equal((await stored(file)).clients[0]?.secrets[0]?.expiresAt, expiresAt, `${extra}`);
    }
  });

  test('refuses a third secret while two are valid, and leaves the file unchanged', async (t) => {
    const { cwd, file } = await withClient(t);
    assert.equal((await rotate(cwd, file, '2026-03-01T00:00:00Z')).code, 0);
    const before = await readFile(file, 'utf8');
    const again = await rotate(cwd, file, '2026-03-01T12:00:00Z');
    assert.equal(again.code, 1);
    assert.equal(again.stdout, '');
    assert.equal(
      again.stderr,
      'portaria: clients rotate-secret: acme already has two valid secrets; the older expires at 2026-03-02T00:00:00Z; try again after it or pass --overlap 0\n',
    );
    assert.equal(await readFile(file, 'utf8'), before);
  });

  test('drops an expired secret before adding the new one', async (t) => {
    const { cwd, file } = await withClient(t);
    assert.equal((await rotate(cwd, file, '2026-03-01T00:00:00Z')).code, 0);
    const [, second] = (await stored(file)).clients[0]?.secrets ?? [];
    // Exactly at its expiry the first secret no longer matches (the authenticator's rule).
    const later = await rotate(cwd, file, '2026-03-02T00:00:00Z', '--overlap', '1h');
    assert.equal(later.code, 0, later.stderr);
    const secrets = (await stored(file)).clients[0]?.secrets ?? [];
    assert.equal(secrets.length, 2);
    assert.deepEqual(secrets[0], { hash: second?.hash, expiresAt: '2026-03-02T01:00:00Z' });
  });

  test('--overlap 0 ends the old secrets now, even when two are valid', async (t) => {
    const { cwd, file } = await withClient(t);
    assert.equal((await rotate(cwd, file, '2026-03-01T00:00:00Z')).code, 0);
    const result = await rotate(cwd, file, '2026-03-01T01:00:00Z', '--overlap', '0');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /\nThe previous secret no longer works\.\n$/);
    const secret = SECRET_LINE.exec(result.stdout)?.[1] ?? assert.fail();
    const secrets = (await loadClientRegistry(file)).get('acme')?.secrets ?? [];
    assert.equal(secrets.length, 1);
    assert.equal(secrets[0]?.expiresAtMs, null);
    assert.equal(await verifySecret(secret, secrets[0]?.hash ?? assert.fail()), true);
  });

  test('gives a client with a chosen (scrypt) secret a generated sha256 one', async (t) => {
    const { cwd, file } = await withClient(t, ['--secret-stdin'], 'an operator chosen secret\n');
    const result = await rotate(cwd, file, '2026-03-01T00:00:00Z');
    assert.equal(result.code, 0, result.stderr);
    const secret = SECRET_LINE.exec(result.stdout)?.[1] ?? assert.fail();
    const [old, fresh] = (await loadClientRegistry(file)).get('acme')?.secrets ?? [];
    assert.equal(old?.hash.scheme, 'scrypt');
    assert.equal(old?.expiresAtMs, Date.UTC(2026, 2, 2));
    assert.equal(fresh?.hash.scheme, 'sha256');
    assert.equal(await verifySecret(secret, fresh?.hash ?? assert.fail()), true);
  });

  test('fails with exit 1 for an unknown client', async (t) => {
    const { cwd, file } = await withClient(t);
    const result = await runCli(['clients', 'rotate-secret', 'nobody', '--clients-file', file], {
      cwd,
    });
    assert.equal(result.code, 1);
    assert.equal(result.stderr, `portaria: clients rotate-secret: no client "nobody" in ${file}\n`);
  });

  test('shows its help, which mentions scrypt clients', async (t) => {
    const cwd = await tempDir(t);
    const help = await runCli(['clients', 'rotate-secret', '--help'], { cwd });
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: portaria clients rotate-secret <id> \[--overlap DURATION\]/);
    assert.match(help.stdout, /--secret-stdin/);
    assert.doesNotMatch(help.stdout, /--now/, 'the test-only option stays hidden');
    const group = await runCli(['clients', '--help'], { cwd });
    assert.match(group.stdout, /^ {2}rotate-secret <id> /m);
    assert.match(group.stdout, /^ {2}remove <id> /m);
  });
});

describe('portaria clients remove', () => {
  test('deletes the client from the file', async (t) => {
    const { cwd, file } = await withClient(t);
    const other = await runCli(
      ['clients', 'add', 'globex', '--scopes', 'a', '--clients-file', file],
      {
        cwd,
      },
    );
    assert.equal(other.code, 0, other.stderr);
    const result = await runCli(['clients', 'remove', 'acme', '--clients-file', file], { cwd });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, `Removed client "acme" from ${file}.\n`);
    assert.deepEqual((await loadClientRegistry(file)).ids(), ['globex']);
  });

  test('fails with exit 1 for an unknown client and leaves the file unchanged', async (t) => {
    const { cwd, file } = await withClient(t);
    const before = await readFile(file, 'utf8');
    const result = await runCli(['clients', 'remove', 'nobody', '--clients-file', file], { cwd });
    assert.equal(result.code, 1);
    assert.equal(result.stderr, `portaria: clients remove: no client "nobody" in ${file}\n`);
    assert.equal(await readFile(file, 'utf8'), before);
  });

  test('shows its help', async (t) => {
    const help = await runCli(['clients', 'remove', '-h'], { cwd: await tempDir(t) });
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: portaria clients remove <id> \[--revoke\]\n/);
  });
});

describe('portaria clients rotate-secret and remove: usage errors exit 2', () => {
  const cases: [string, string[], string][] = [
    ['rotate-secret without an id', ['rotate-secret'], 'clients rotate-secret: missing <id>'],
    [
      'rotate-secret with a bad duration',
      ['rotate-secret', 'acme', '--overlap', '2w'],
      'clients rotate-secret: --overlap: "2w" is not a duration (30m, 24h, 7d or seconds, at most 365d)',
    ],
    [
      'rotate-secret with an overlap over a year',
      ['rotate-secret', 'acme', '--overlap', '366d'],
      'clients rotate-secret: --overlap: "366d" is not a duration (30m, 24h, 7d or seconds, at most 365d)',
    ],
    [
      'rotate-secret with two ids',
      ['rotate-secret', 'acme', 'globex'],
      'clients rotate-secret: unexpected argument "globex"',
    ],
    [
      'rotate-secret with a bad --now',
      ['rotate-secret', 'acme', '--now', 'yesterday'],
      'clients rotate-secret: --now: not a date-time',
    ],
    ['remove without an id', ['remove'], 'clients remove: missing <id>'],
    [
      'remove with an unknown option',
      ['remove', 'acme', '--force'],
      'clients remove: unknown option --force',
    ],
  ];
  for (const [name, args, message] of cases) {
    test(name, async (t) => {
      const cwd = await tempDir(t);
      const result = await runCli(['clients', ...args], { cwd });
      assert.equal(result.code, 2);
      assert.equal(result.stdout, '');
      const command = message.split(':')[0];
      assert.equal(result.stderr, `portaria: ${message} (see "portaria ${command} --help")\n`);
    });
  }
});
