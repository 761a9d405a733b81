import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadKeyRing } from '../../src/keys/loadKeyRing.js';
import { CLI, runCli, tempDir } from '../helpers/runCli.js';

describe('portaria command line', () => {
  const usageErrors: [string[], string][] = [
    [[], 'portaria: missing command (see "portaria --help")'],
    [['--frob'], 'portaria: unknown option --frob (see "portaria --help")'],
    [['frob'], 'portaria: unknown command "frob" (see "portaria --help")'],
    [['clients'], 'portaria: clients: missing command (see "portaria clients --help")'],
    [
      ['clients', 'frob'],
      'portaria: clients: unknown command "frob" (see "portaria clients --help")',
    ],
    [
      ['clients', 'add', 'acme', '--scopes', 'a', '--foo'],
      'portaria: clients add: unknown option --foo (see "portaria clients add --help")',
    ],
    [['clients', 'add'], 'portaria: clients add: missing <id> (see "portaria clients add --help")'],
    [
      ['clients', 'add', 'acme'],
      'portaria: clients add: missing --scopes (see "portaria clients add --help")',
    ],
    [
      ['clients', 'add', 'acme', '--scopes'],
      'portaria: clients add: option --scopes needs a value (see "portaria clients add --help")',
    ],
    [
      ['clients', 'add', 'a\tb', '--scopes', 'x'],
      'portaria: clients add: client id "a\\tb": must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates (control character U+0009 at index 1) (see "portaria clients add --help")',
    ],
    [
      ['clients', 'add', 'acme', '--scopes', 'a,b"c'],
      'portaria: clients add: --scopes: "b\\"c" is not a scope token (RFC 6749 §3.3: printable ASCII without space, " or \\) (see "portaria clients add --help")',
    ],
    [
      ['clients', 'add', 'acme', '--scopes', 'a', '--lifetime', '0'],
      'portaria: clients add: --lifetime: must be an integer number of seconds from 1 to 86400 (see "portaria clients add --help")',
    ],
    [
      ['clients', 'add', 'acme', 'extra', '--scopes', 'a'],
      'portaria: clients add: unexpected argument "extra" (see "portaria clients add --help")',
    ],
    [
      ['clients', 'list', '--secret-stdin'],
      'portaria: clients list: unknown option --secret-stdin (see "portaria clients list --help")',
    ],
    [
      ['client', 'list'],
      'portaria: unknown command "client" (did you mean "clients"?) (see "portaria --help")',
    ],
    [['kyes'], 'portaria: unknown command "kyes" (did you mean "keys"?) (see "portaria --help")'],
    [
      ['clients', 'lsit'],
      'portaria: clients: unknown command "lsit" (did you mean "list"?) (see "portaria clients --help")',
    ],
    [
      ['clients', 'rotate-secrets', 'acme'],
      'portaria: clients: unknown command "rotate-secrets" (did you mean "rotate-secret"?) (see "portaria clients --help")',
    ],
    [
      ['keys', 'rotat'],
      'portaria: keys: unknown command "rotat" (did you mean "rotate"?) (see "portaria keys --help")',
    ],
    [
      ['config', 'chek'],
      'portaria: config: unknown command "chek" (did you mean "check"?) (see "portaria config --help")',
    ],
    [
      ['revoke', 'lst'],
      'portaria: revoke: unknown command "lst" (did you mean "list"?) (see "portaria revoke --help")',
    ],
    [
      ['clients', 'list', '--client-file', 'x'],
      'portaria: clients list: unknown option --client-file (did you mean --clients-file?) (see "portaria clients list --help")',
    ],
    [
      ['--confg', 'x'],
      'portaria: unknown option --confg (did you mean --config?) (see "portaria --help")',
    ],
    [['keys'], 'portaria: keys: missing command (see "portaria keys --help")'],
    [
      ['keys', 'generate', '--alg', 'HS256'],
      'portaria: keys generate: --alg must be one of ES256, EdDSA, RS256, PS256 (see "portaria keys generate --help")',
    ],
  ];
  for (const [args, line] of usageErrors) {
    test(`exits 2 with one line on stderr for: portaria ${args.join(' ')}`, async (t) => {
      const cwd = await tempDir(t);
      const result = await runCli(args, { cwd });
      assert.equal(result.code, 2);
      assert.equal(result.stdout, '');
      assert.equal(result.stderr, `${line}\n`);
    });
  }

  const helps: [string[], string][] = [
    [['--help'], 'Usage: portaria <group> <command> [options]\n'],
    [['-h'], 'Usage: portaria <group> <command> [options]\n'],
    [['clients', '--help'], 'Usage: portaria clients <command> [options]\n'],
    [['clients', 'add', '--help'], 'Usage: portaria clients add <id> --scopes'],
    [['clients', 'add', 'acme', '--bogus', '--help'], 'Usage: portaria clients add <id> --scopes'],
    [['clients', 'list', '--help'], 'Usage: portaria clients list [-o json]\n'],
    [['clients', 'disable', '-h'], 'Usage: portaria clients disable <id>\n'],
    [['keys', '--help'], 'Usage: portaria keys <command> [options]\n'],
    [
      ['keys', 'generate', '--help'],
      'Usage: portaria keys generate [--alg ES256|EdDSA|RS256|PS256]\n',
    ],
  ];
  for (const [args, start] of helps) {
    test(`prints help and exits 0 for: portaria ${args.join(' ')}`, async (t) => {
      const cwd = await tempDir(t);
      const result = await runCli(args, { cwd });
      assert.equal(result.code, 0);
      assert.equal(result.stderr, '');
      assert.ok(result.stdout.startsWith(start), result.stdout);
    });
  }

  test('prints the version from package.json', async (t) => {
    const cwd = await tempDir(t);
    const pkg = JSON.parse(
      await readFile(new URL('../../../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    const result = await runCli(['--version'], { cwd });
    assert.equal(result.code, 0);
    assert.equal(result.stdout, `portaria ${pkg.version}\n`);
  });

  test('starts with a shebang so it runs as the package binary', async () => {
    assert.ok((await readFile(CLI, 'utf8')).startsWith('#!/usr/bin/env node\n'));
  });
});

describe('portaria keys generate', () => {
  test('writes a key the gateway signs with and prints its kid and path', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const result = await runCli(['keys', 'generate', '--alg', 'EdDSA', '--keys-dir', dir], { cwd });
    assert.equal(result.code, 0, result.stderr);
    const kid = /^kid: +(\S+)$/m.exec(result.stdout)?.[1];
    assert.match(kid ?? '', /^\d{8}T\d{6}Z-[0-9a-f]{8}$/);
    const path = join(dir, `${kid}.pem`);
    assert.equal(result.stdout, `kid:  ${kid}\nalg:  EdDSA\npath: ${path}\n`);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    const ring = await loadKeyRing(dir, 'EdDSA');
    assert.equal(ring.signingKey.kid, kid);
  });

  test('defaults to ES256 in PORTARIA_KEYS_DIR, else ./data/keys', async (t) => {
    const cwd = await tempDir(t);
    const fromEnv = join(cwd, 'env-keys');
    const a = await runCli(['keys', 'generate'], { cwd, env: { PORTARIA_KEYS_DIR: fromEnv } });
    assert.equal(a.code, 0, a.stderr);
    assert.equal((await loadKeyRing(fromEnv, 'ES256')).jwks().keys.length, 1);
    const b = await runCli(['keys', 'generate'], { cwd });
    assert.equal(b.code, 0, b.stderr);
    assert.match(b.stdout, /^path: data\/keys\/\S+\.pem$/m);
    assert.equal((await loadKeyRing(join(cwd, 'data', 'keys'), 'ES256')).jwks().keys.length, 1);
  });
});

/** Every help text of the CLI: the top level, each group and each command. */
const HELP_COMMANDS: readonly string[][] = [
  [],
  ['clients'],
  ['clients', 'add'],
  ['clients', 'list'],
  ['clients', 'enable'],
  ['clients', 'disable'],
  ['clients', 'rotate-secret'],
  ['clients', 'remove'],
  ['keys'],
  ['keys', 'generate'],
  ['keys', 'rotate'],
  ['keys', 'list'],
  ['keys', 'remove'],
  ['revoke'],
  ['revoke', 'list'],
  ['config'],
  ['config', 'check'],
];

/**
 * The column where each entry's description starts, per section (`Options:`,
 * `Commands:`, `Groups:`), and the continuation lines' indentation: one column per section.
 */
function misalignedLines(help: string): string[] {
  const bad: string[] = [];
  let column: number | null = null;
  for (const line of help.split('\n')) {
    if (/^\S.*:$/.test(line) || line === '') {
      if (/^\S.*:$/.test(line)) column = null;
      continue;
    }
    if (!line.startsWith('  ')) continue;
    const entry = /^ {2}(\S(?:\S| (?! ))*) {2,}(\S)/.exec(line);
    const start = entry ? line.length - line.slice(entry[0].length - 1).length : null;
    const continuation = /^ {3,}\S/.test(line) ? (/\S/.exec(line)?.index ?? 0) : null;
    const at = start ?? continuation;
    if (at === null) continue;
    column ??= at;
    if (at !== column) bad.push(`${at} ≠ ${column}: ${line}`);
  }
  return bad;
}

describe('portaria help', () => {
  for (const command of HELP_COMMANDS) {
    test(`help columns align: portaria ${[...command, '--help'].join(' ')}`, async (t) => {
      const cwd = await tempDir(t);
      const result = await runCli([...command, '--help'], { cwd });
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(misalignedLines(result.stdout), []);
    });
  }

  test('"portaria help" is --help, at every level', async (t) => {
    const cwd = await tempDir(t);
    for (const command of [
      [],
      ['clients'],
      ['keys', 'list'],
      ['revoke', 'list'],
      ['config', 'check'],
    ]) {
      const viaHelp = await runCli(['help', ...command], { cwd });
      const viaFlag = await runCli([...command, '--help'], { cwd });
      assert.equal(viaHelp.code, 0, viaHelp.stderr);
      assert.equal(viaHelp.stdout, viaFlag.stdout, command.join(' '));
    }
  });

  test('-V is --version', async (t) => {
    const cwd = await tempDir(t);
    const [short, long] = await Promise.all([
      runCli(['-V'], { cwd }),
      runCli(['--version'], { cwd }),
    ]);
    assert.equal(short.code, 0);
    assert.match(short.stdout, /^portaria \d+\.\d+\.\d+/);
    assert.equal(short.stdout, long.stdout);
  });
});
