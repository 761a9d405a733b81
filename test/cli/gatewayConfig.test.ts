/**
 * `--config` / $PORTARIA_CONFIG on the CLI: every command takes its files, algorithm,
 * timing and admin listener from the gateway's own configuration file, loaded as the
 * gateway loads it; the command's options still win. The compiled CLI runs as a child
 * process, from a working directory other than the configuration's.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { adminUrlOf } from '../../src/cli/gatewayConfig.js';
import { loadClientRegistry } from '../../src/clients/clientRegistry.js';
import { loadConfig } from '../../src/config/loadConfig.js';
import { loadKeyRing } from '../../src/keys/loadKeyRing.js';
import { ManualClock, systemClock } from '../../src/lib/clock.js';
import { MemoryRevocationStore } from '../../src/revocation/memoryRevocationStore.js';
import { runCli, tempDir } from '../helpers/runCli.js';
import { startAdminApi } from './adminApi.js';

const T0 = '2026-01-01T00:00:00Z';

interface Layout {
  /** Where the configuration file and its relative paths live. */
  readonly configDir: string;
  readonly configFile: string;
  /** The CLI's working directory: somewhere else. */
  readonly cwd: string;
}

async function layout(t: TestContext, yaml: string): Promise<Layout> {
  const root = await tempDir(t);
  const configDir = join(root, 'etc');
  const cwd = join(root, 'elsewhere');
  await mkdir(configDir);
  await mkdir(cwd);
  const configFile = join(configDir, 'portaria.yaml');
  await writeFile(configFile, yaml);
  return { configDir, configFile, cwd };
}

const KEYS_CONFIG = `
clockSkewSeconds: 30
token:
  algorithm: EdDSA
keys:
  dir: keys
  jwksMaxAgeSeconds: 1200
clients:
  file: clients.json
`;

function kidOf(stdout: string): string {
  return /^kid: +(\S+)$/m.exec(stdout)?.[1] ?? '';
}

describe('portaria CLI with the gateway configuration', () => {
  test('keys generate and rotate take the directory, algorithm, JWKS max-age and skew from --config', async (t) => {
    const l = await layout(t, KEYS_CONFIG);
    const generated = await runCli(['keys', 'generate', '--config', l.configFile], {
      cwd: l.cwd,
    });
    assert.equal(generated.code, 0, generated.stderr);
    const a = kidOf(generated.stdout);
    assert.match(generated.stdout, /^alg: +EdDSA$/m);
    assert.deepEqual(await readdir(join(l.configDir, 'keys')), [`${a}.pem`]);
    assert.deepEqual(await readdir(l.cwd), [], 'nothing written in the working directory');

    const rotated = await runCli(['keys', 'rotate', '--config', l.configFile, '--now', T0], {
      cwd: l.cwd,
    });
    assert.equal(rotated.code, 0, rotated.stderr);
    const b = kidOf(rotated.stdout);
    assert.match(rotated.stdout, /^alg: +EdDSA$/m);
    // Signs after the configuration's max-age and skew: 1200 + 30 s (the built-in
    // defaults, 300 + 60 s, would say 00:06:00).
    assert.match(rotated.stdout, /^activateAt: 2026-01-01T00:20:30Z$/m);
    assert.match(
      rotated.stdout,
      /^Every gateway must have loaded this directory by 2026-01-01T00:00:30Z /m,
    );
    // The longest lifetime stays the most a client may have (one day), plus the skew.
    assert.ok(
      rotated.stdout.includes(
        `retiring:   ${a} retireAt 2026-01-01T00:20:30Z removeAt 2026-01-02T00:21:00Z\n`,
      ),
      rotated.stdout,
    );

    // The gateway, loading the same configuration, follows that schedule.
    const config = await loadConfig({ file: l.configFile, env: {}, cwd: l.cwd });
    const clock = new ManualClock(Date.parse('2026-01-01T00:20:29.999Z'));
    const ring = await loadKeyRing(config.keys.dir, config.token.algorithm, clock);
    assert.equal(ring.signingKey.kid, a);
    clock.advance(1);
    assert.equal(ring.signingKey.kid, b);
  });

  test("a command's own options win over the configuration", async (t) => {
    const l = await layout(t, KEYS_CONFIG);
    const otherDir = join(l.cwd, 'other-keys');
    const first = await runCli(
      ['keys', 'generate', '--config', l.configFile, '--keys-dir', otherDir, '--alg', 'ES256'],
      { cwd: l.cwd },
    );
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^alg: +ES256$/m);
    assert.equal((await readdir(otherDir)).length, 1);
    const rotated = await runCli(
      [
        'keys',
        'rotate',
        '--config',
        l.configFile,
        '--keys-dir',
        otherDir,
        '--alg',
        'ES256',
        '--jwks-max-age',
        '0',
        '--skew',
        '5',
        '--now',
        T0,
      ],
      { cwd: l.cwd },
    );
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^activateAt: 2026-01-01T00:00:05Z$/m);
    await assert.rejects(readdir(join(l.configDir, 'keys')), { code: 'ENOENT' });
  });

  test('$PORTARIA_CONFIG is read when --config is absent, with the overrides the gateway honours', async (t) => {
    const l = await layout(t, KEYS_CONFIG);
    const generated = await runCli(['keys', 'generate'], {
      cwd: l.cwd,
      env: { PORTARIA_CONFIG: l.configFile },
    });
    assert.equal(generated.code, 0, generated.stderr);
    const a = kidOf(generated.stdout);
    assert.match(generated.stdout, /^alg: +EdDSA$/m);
    const listed = await runCli(['keys', 'list'], {
      cwd: l.cwd,
      env: { PORTARIA_CONFIG: l.configFile },
    });
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`^${a} +EdDSA +active `, 'm'));

    // PORTARIA_KEYS_DIR applies through the configuration, relative to its directory,
    // exactly as for the gateway.
    const overridden = await runCli(['keys', 'generate'], {
      cwd: l.cwd,
      env: { PORTARIA_CONFIG: l.configFile, PORTARIA_KEYS_DIR: 'keys-b' },
    });
    assert.equal(overridden.code, 0, overridden.stderr);
    assert.equal((await readdir(join(l.configDir, 'keys-b'))).length, 1);
  });

  test("clients add, list and disable edit the configuration's clients file, which the gateway loads", async (t) => {
    const l = await layout(t, KEYS_CONFIG);
    const added = await runCli(
      ['clients', 'add', 'acme', '--scopes', 'orders:read', '--config', l.configFile],
      { cwd: l.cwd },
    );
    assert.equal(added.code, 0, added.stderr);
    const file = join(l.configDir, 'clients.json');
    assert.ok(added.stdout.includes(`to ${file}.`), added.stdout);
    const disabled = await runCli(['clients', 'disable', 'acme', '--config', l.configFile], {
      cwd: l.cwd,
    });
    assert.equal(disabled.code, 0, disabled.stderr);
    const listed = await runCli(['clients', 'list'], {
      cwd: l.cwd,
      env: { PORTARIA_CONFIG: l.configFile },
    });
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^acme +orders:read +\S+ +yes +1 +basic,post$/m);

    const config = await loadConfig({ file: l.configFile, env: {}, cwd: l.cwd });
    const registry = await loadClientRegistry(config.clients.file);
    assert.equal(registry.get('acme')?.disabled, true);
    assert.deepEqual(await readdir(l.cwd), []);
  });

  test('--config before the group is the same as after the command, as the top-level help offers it', async (t) => {
    const l = await layout(t, KEYS_CONFIG);
    const added = await runCli(
      ['--config', l.configFile, 'clients', 'add', 'acme', '--scopes', 'orders:read'],
      { cwd: l.cwd },
    );
    assert.equal(added.code, 0, added.stderr);
    assert.ok(added.stdout.includes(`to ${join(l.configDir, 'clients.json')}.`), added.stdout);
    const before = await runCli(['--config', l.configFile, 'clients', 'list', '-o', 'json'], {
      cwd: l.cwd,
    });
    const equals = await runCli([`--config=${l.configFile}`, 'clients', 'list', '-o', 'json'], {
      cwd: l.cwd,
    });
    const after = await runCli(['clients', 'list', '-o', 'json', '--config', l.configFile], {
      cwd: l.cwd,
    });
    assert.equal(before.code, 0, before.stderr);
    assert.equal(before.stdout, after.stdout);
    assert.equal(equals.stdout, after.stdout);
    assert.deepEqual(
      (JSON.parse(before.stdout) as { id: string }[]).map((c) => c.id),
      ['acme'],
    );
    const generated = await runCli(['--config', l.configFile, 'keys', 'generate'], {
      cwd: l.cwd,
    });
    assert.equal(generated.code, 0, generated.stderr);
    assert.match(generated.stdout, /^alg: +EdDSA$/m);
    const checked = await runCli(['--config', l.configFile, 'config', 'check', '-o', 'json'], {
      cwd: l.cwd,
    });
    assert.equal((JSON.parse(checked.stdout) as { file: string }).file, l.configFile);
    // It wins over $PORTARIA_CONFIG; the command's own --config wins over it.
    const other = await layout(t, 'clients:\n  file: other.json\n');
    const overEnv = await runCli(['--config', l.configFile, 'clients', 'list', '-o', 'json'], {
      cwd: l.cwd,
      env: { PORTARIA_CONFIG: other.configFile },
    });
    assert.equal(overEnv.stdout, after.stdout);
    const own = await runCli(
      ['--config', l.configFile, 'clients', 'list', '--config', other.configFile],
      { cwd: l.cwd },
    );
    assert.equal(own.code, 1);
    assert.match(own.stderr, /^portaria: clients list: .*other\.json/);
  });

  test('--config before the group: a missing value and the failures name the command after it', async (t) => {
    const l = await layout(t, 'clockSkewSeconds: 9999\n');
    const cases: [string[], number, string][] = [
      [['--config'], 2, 'portaria: option --config needs a value (see "portaria --help")'],
      [
        ['--config', '--help'],
        2,
        'portaria: option --config needs a value (see "portaria --help")',
      ],
      [
        ['--config=', 'keys', 'list'],
        2,
        'portaria: option --config needs a non-empty value (see "portaria --help")',
      ],
      [['--config', l.configFile], 2, 'portaria: missing command (see "portaria --help")'],
      [
        ['--config', l.configFile, 'keys', 'list'],
        1,
        'portaria: keys list: invalid configuration:\n  - clockSkewSeconds: must be <= 600',
      ],
      [
        ['--keys-dir', 'k', 'keys', 'list'],
        2,
        'portaria: option --keys-dir goes after the command (portaria <group> <command> --keys-dir …) (see "portaria --help")',
      ],
    ];
    for (const [args, code, stderr] of cases) {
      const r = await runCli(args, { cwd: l.cwd });
      assert.equal(r.code, code, args.join(' '));
      assert.equal(r.stderr, `${stderr}\n`, args.join(' '));
    }
  });

  test('revoke reaches the admin listener named by the configuration, with its token file', async (t) => {
    const ADMIN_TOKEN = 'config-admin-token-0123456789abcdefghij';
    const store = new MemoryRevocationStore(systemClock);
    const port = await startAdminApi(t, store, ADMIN_TOKEN);
    // A listener on every interface is reached on loopback.
    const l = await layout(
      t,
      `admin:\n  host: 0.0.0.0\n  port: ${port}\n  tokenFile: secrets/admin-token\n`,
    );
    await mkdir(join(l.configDir, 'secrets'));
    await writeFile(join(l.configDir, 'secrets', 'admin-token'), `${ADMIN_TOKEN}\n`);

    const r = await runCli(['revoke', '--jti', 'tok-9', '--config', l.configFile], {
      cwd: l.cwd,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Revoked token "tok-9" /);
    assert.ok(!r.stdout.includes(ADMIN_TOKEN) && !r.stderr.includes(ADMIN_TOKEN));
    const now = Math.floor(Date.now() / 1000);
    assert.equal(store.isRevoked({ tokenId: 'tok-9', clientId: 'x', issuedAt: now }), true);
  });

  test('revoke with a configuration whose admin API is off says so (exit 2)', async (t) => {
    const l = await layout(t, 'admin:\n  port: 9555\n');
    const r = await runCli(['revoke', '--jti', 'tok-1', '--config', l.configFile], {
      cwd: l.cwd,
    });
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      `portaria: revoke: missing --token-file: the configuration has no admin.tokenFile (the gateway's admin API is off) (see "portaria revoke --help")\n`,
    );
  });

  test('an invalid or missing configuration fails the command with its problems (exit 1), changing nothing', async (t) => {
    const l = await layout(t, 'clockSkewSeconds: 9999\nkeys:\n  dir: keys\n  colour: blue\n');
    const r = await runCli(['keys', 'generate', '--config', l.configFile], { cwd: l.cwd });
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      'portaria: keys generate: invalid configuration:\n  - clockSkewSeconds: must be <= 600\n  - keys.colour: unknown setting\n',
    );
    assert.equal(r.stdout, '');
    await assert.rejects(readdir(join(l.configDir, 'keys')), { code: 'ENOENT' });

    const missing = join(l.configDir, 'absent.yaml');
    const m = await runCli(['clients', 'list', '--config', missing], { cwd: l.cwd });
    assert.equal(m.code, 1);
    assert.equal(
      m.stderr,
      `portaria: clients list: invalid configuration:\n  - ${missing}: cannot read the configuration file (ENOENT)\n`,
    );
  });

  test('every command documents --config in its help', async (t) => {
    const cwd = await tempDir(t);
    const commands = [
      ['clients', 'add'],
      ['clients', 'list'],
      ['clients', 'disable'],
      ['clients', 'rotate-secret'],
      ['clients', 'remove'],
      ['keys', 'generate'],
      ['keys', 'rotate'],
      ['keys', 'list'],
      ['keys', 'remove'],
      ['revoke'],
    ];
    for (const command of commands) {
      const r = await runCli([...command, '--help'], { cwd });
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stdout,
        /^ {2}--config FILE +the gateway's configuration file/m,
        command.join(' '),
      );
    }
    const top = await runCli(['--help'], { cwd });
    assert.match(top.stdout, /--config FILE \/ \$PORTARIA_CONFIG/);
  });
});

describe('adminUrlOf', () => {
  const base = { port: 9091, tokenFile: null };
  const url = (host: string) =>
    adminUrlOf({ admin: { ...base, host } } as unknown as Parameters<typeof adminUrlOf>[0]);
  test('reaches a wildcard listener on loopback and brackets IPv6 addresses', () => {
    assert.equal(url('127.0.0.1'), 'http://127.0.0.1:9091');
    assert.equal(url('0.0.0.0'), 'http://127.0.0.1:9091');
    assert.equal(url('::'), 'http://[::1]:9091');
    assert.equal(url('::1'), 'http://[::1]:9091');
    assert.equal(url('admin.internal'), 'http://admin.internal:9091');
  });
});
