/**
 * scripts/test-prerequisites.mjs, which `npm test` runs before anything else: silent when
 * the programs the tests drive are on PATH; as root with apt-get, installs the missing
 * ones; otherwise one line naming them, their packages and the install command, exit 1 —
 * never a suite run that fails test after test. Each case runs the real script with PATH
 * set to a directory of stand-ins: programs that do nothing, and apt-get, systemctl and
 * service that record how they were called (apt-get "installs" by adding stand-ins).
 */
import assert from 'node:assert/strict';
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { chmod, copyFile, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { OTHER_USER_UNAVAILABLE } from '../helpers/otherUser.js';
import { tempDir } from '../helpers/process.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SCRIPT = join(REPO_ROOT, 'scripts', 'test-prerequisites.mjs');
const ROOT = process.getuid?.() === 0;
const NOBODY = 65534;
/** setpriv's path: the script runs with a PATH that does not lead to it. */
const SETPRIV = spawnSync('sh', ['-c', 'command -v setpriv'], { encoding: 'utf8' }).stdout.trim();

interface Machine {
  /** The only directory on PATH. */
  readonly bin: string;
  readonly script: string;
  /** What apt-get, systemctl and service were called with, one line per call. */
  calls(): Promise<string[]>;
}

/**
 * A directory of stand-ins for `programs`, the recording apt-get, systemctl and service,
 * and a copy of the script, all readable by anyone (the checkout may be in a directory
 * others cannot enter). apt-get exits `aptStatus`; `apt-get install` adds stand-ins for
 * the packages' programs.
 */
async function machine(
  t: TestContext,
  programs: readonly string[],
  aptStatus = 0,
): Promise<Machine> {
  const dir = await tempDir(t, 'portaria-prerequisites-');
  await chmod(dir, 0o755);
  const bin = join(dir, 'bin');
  await mkdir(bin, { mode: 0o755 });
  const log = join(dir, 'calls.log');
  await writeFile(log, '');
  await chmod(log, 0o666);
  for (const program of programs) await symlink('/bin/true', join(bin, program));
  const record = `echo "$(/usr/bin/basename "$0") $* DEBIAN_FRONTEND=$DEBIAN_FRONTEND" >> ${log}`;
  await writeFile(
    join(bin, 'apt-get'),
    `#!/bin/sh
${record}
if [ "${aptStatus}" != 0 ]; then exit ${aptStatus}; fi
case " $* " in *" install "*)
  for p in "$@"; do
    case "$p" in
      redis-server) /bin/ln -s /bin/true ${bin}/redis-server ;;
      prometheus) /bin/ln -s /bin/true ${bin}/promtool ;;
      curl|unzip|openssl|nginx) /bin/ln -s /bin/true ${bin}/$p ;;
    esac
  done ;;
esac
`,
    { mode: 0o755 },
  );
  for (const name of ['systemctl', 'service']) {
    await writeFile(join(bin, name), `#!/bin/sh\n${record}\n`, { mode: 0o755 });
  }
  const script = join(dir, 'test-prerequisites.mjs');
  await copyFile(SCRIPT, script);
  await chmod(script, 0o644);
  return {
    bin,
    script,
    calls: async () => (await readFile(log, 'utf8')).split('\n').filter((line) => line !== ''),
  };
}

/** Runs the script with only `m.bin` on PATH, as this user or (as root) as nobody. */
function prerequisites(
  m: Machine,
  options: { asRoot: boolean; env?: Record<string, string> },
): SpawnSyncReturns<string> {
  const env = { PATH: m.bin, ...options.env };
  const node = [process.execPath, m.script];
  const command =
    options.asRoot || !ROOT
      ? node
      : [SETPRIV, '--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups', ...node];
  return spawnSync(command[0] as string, command.slice(1), {
    encoding: 'utf8',
    env,
    cwd: dirname(m.script),
  });
}

const ALL = ['redis-server', 'promtool', 'curl', 'unzip', 'openssl', 'nginx'];

describe('test prerequisites', () => {
  test('everything on PATH: exit 0, nothing printed, nothing installed', async (t) => {
    const m = await machine(t, ALL);
    const run = prerequisites(m, { asRoot: ROOT });
    assert.deepEqual([run.status, run.stdout, run.stderr], [0, '', '']);
    assert.deepEqual(await m.calls(), []);
  });

  test('redis-server and promtool missing, not root: one line naming them, their packages and the command; exit 1; nothing installed', {
    skip: ROOT ? OTHER_USER_UNAVAILABLE : false,
  }, async (t) => {
    const m = await machine(t, ['curl', 'unzip', 'openssl', 'nginx']);
    const run = prerequisites(m, { asRoot: false });
    assert.equal(run.status, 1);
    assert.equal(run.stdout, '');
    assert.equal(
      run.stderr,
      'test-prerequisites: npm test needs redis-server, promtool, not found on PATH; install the Debian/Ubuntu packages with: sudo apt-get install -y --no-install-recommends redis-server prometheus\n',
    );
    assert.deepEqual(await m.calls(), []);
  });

  test('redis-server and promtool missing, as root with apt-get: both installed, their services stopped, exit 0', {
    skip: ROOT ? false : 'needs root to run the script as root',
  }, async (t) => {
    const m = await machine(t, ['curl', 'unzip', 'openssl', 'nginx']);
    const run = prerequisites(m, { asRoot: true });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(
      run.stderr,
      'test-prerequisites: installing redis-server prometheus with apt-get\n',
    );
    assert.deepEqual(await m.calls(), [
      'apt-get update -qq DEBIAN_FRONTEND=noninteractive',
      'apt-get -qq install -y --no-install-recommends redis-server prometheus DEBIAN_FRONTEND=noninteractive',
      'systemctl disable --now redis-server prometheus DEBIAN_FRONTEND=noninteractive',
      'service redis-server stop DEBIAN_FRONTEND=noninteractive',
      'service prometheus stop DEBIAN_FRONTEND=noninteractive',
    ]);
  });

  test('curl missing, as root with apt-get: curl installed, no service touched', {
    skip: ROOT ? false : 'needs root to run the script as root',
  }, async (t) => {
    const m = await machine(t, ['redis-server', 'promtool', 'unzip', 'openssl', 'nginx']);
    const run = prerequisites(m, { asRoot: true });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(await m.calls(), [
      'apt-get update -qq DEBIAN_FRONTEND=noninteractive',
      'apt-get -qq install -y --no-install-recommends curl DEBIAN_FRONTEND=noninteractive',
    ]);
  });

  test('nginx missing, as root with apt-get: installed, its service (which listens on port 80) stopped', {
    skip: ROOT ? false : 'needs root to run the script as root',
  }, async (t) => {
    const m = await machine(t, ['redis-server', 'promtool', 'curl', 'unzip', 'openssl']);
    const run = prerequisites(m, { asRoot: true });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(await m.calls(), [
      'apt-get update -qq DEBIAN_FRONTEND=noninteractive',
      'apt-get -qq install -y --no-install-recommends nginx DEBIAN_FRONTEND=noninteractive',
      'systemctl disable --now nginx DEBIAN_FRONTEND=noninteractive',
      'service nginx stop DEBIAN_FRONTEND=noninteractive',
    ]);
  });

  test('as root, apt-get failing: one line naming the failed command; exit 1', {
    skip: ROOT ? false : 'needs root to run the script as root',
  }, async (t) => {
    const m = await machine(t, ['curl', 'unzip', 'openssl', 'nginx'], 100);
    const run = prerequisites(m, { asRoot: true });
    assert.equal(run.status, 1);
    assert.equal(
      run.stderr,
      'test-prerequisites: installing redis-server prometheus with apt-get\ntest-prerequisites: apt-get update -qq failed (exit 100)\n',
    );
  });

  test('as root without apt-get: one line with the install command; exit 1', {
    skip: ROOT ? false : 'needs root to run the script as root',
  }, async (t) => {
    const m = await machine(t, ['redis-server', 'curl', 'unzip', 'openssl', 'nginx']);
    const run = spawnSync(process.execPath, [m.script], {
      encoding: 'utf8',
      env: { PATH: join(m.bin, 'none') },
    });
    assert.equal(run.status, 1);
    assert.match(
      run.stderr,
      /^test-prerequisites: npm test needs redis-server, promtool, curl, openssl, unzip, nginx, not found on PATH; install the Debian\/Ubuntu packages with: apt-get install -y --no-install-recommends redis-server prometheus curl openssl unzip nginx\n$/,
    );
  });

  test('REDIS_SERVER naming a missing file: one line naming it; exit 1; nothing installed', async (t) => {
    const m = await machine(t, ALL);
    const run = prerequisites(m, {
      asRoot: ROOT,
      env: { REDIS_SERVER: '/nonexistent/redis-server' },
    });
    assert.equal(run.status, 1);
    assert.equal(
      run.stderr,
      'test-prerequisites: REDIS_SERVER=/nonexistent/redis-server: not an executable file\n',
    );
    assert.deepEqual(await m.calls(), []);
  });

  test('PROMTOOL naming an executable file off PATH: exit 0', async (t) => {
    const m = await machine(t, ['redis-server', 'curl', 'unzip', 'openssl', 'nginx']);
    const run = prerequisites(m, { asRoot: ROOT, env: { PROMTOOL: '/bin/true' } });
    assert.deepEqual([run.status, run.stderr], [0, '']);
  });

  test('npm test runs the check before it removes and rebuilds dist-test', async () => {
    const manifest = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    assert.match(manifest.scripts.pretest ?? '', /^node scripts\/test-prerequisites\.mjs && /);
  });
});
