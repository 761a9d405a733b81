/**
 * Code run as another user, for permission tests: `setpriv` (util-linux) starts Node with
 * the given uid, gid and supplementary groups. Only root can do that; elsewhere the tests
 * that need it are skipped with this reason.
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const OTHER_USER_UNAVAILABLE: string | false =
  process.getuid?.() !== 0 || spawnSync('setpriv', ['--version']).status !== 0
    ? 'needs root and setpriv (util-linux) to act as another user'
    : false;

/** A compiled source module (`src/lib/atomicWrite.js`), as a path for `import()`. */
export function sourceModule(relative: string): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '../../src', relative);
}

/**
 * Runs `body` as an async function of `m` (the module `module`) as `uid`:`gid` with
 * `groups` (none when empty); what it returns is printed as JSON on stdout.
 */
export function runAsUser(
  user: { uid: number; gid: number; groups: readonly number[] },
  module: string,
  body: string,
): SpawnSyncReturns<string> {
  const script = `import(${JSON.stringify(module)}).then(async (m) => console.log(JSON.stringify(await (async () => { ${body} })())))`;
  return spawnSync(
    'setpriv',
    [
      '--reuid',
      String(user.uid),
      '--regid',
      String(user.gid),
      ...(user.groups.length > 0 ? ['--groups', user.groups.join(',')] : ['--clear-groups']),
      process.execPath,
      '-e',
      script,
    ],
    { encoding: 'utf8' },
  );
}
