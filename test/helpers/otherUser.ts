/**
 * Code run as another user, for permission tests: `setpriv` (util-linux) starts Node with
 * the given uid, gid and supplementary groups. Only root can do that; elsewhere the tests
 * that need it are skipped with this reason.
 *
 * The other user runs a copy of the module, never the checkout's file: the checkout may
 * lie inside a directory that user cannot enter (`mktemp -d`, `/root` and a Debian 12 home
 * directory are 0700), so the module, what it imports and the packages it needs are copied
 * into a fresh directory under the system's temporary directory that anyone may enter.
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
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
 * `groups` (none when empty); what it returns is printed as JSON on stdout. The module
 * runs from a copy that is removed afterwards.
 */
export function runAsUser(
  user: { uid: number; gid: number; groups: readonly number[] },
  module: string,
  body: string,
): SpawnSyncReturns<string> {
  const copy = mkdtempSync(join(tmpdir(), 'portaria-other-user-'));
  try {
    chmodSync(copy, 0o755);
    const copied = copyForOtherUsers(module, copy);
    const script = `import(${JSON.stringify(copied)}).then(async (m) => console.log(JSON.stringify(await (async () => { ${body} })())))`;
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
      { encoding: 'utf8', cwd: copy },
    );
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

/**
 * Copies `module` into `target`, laid out as in its package (the nearest directory with a
 * package.json, copied too for its module type): every module it reaches by relative
 * imports, and for each package it imports that package's directory and, transitively,
 * the packages it depends on. Returns the copy of `module`. Everything copied is readable
 * by anyone, whatever the umask was when the checkout was made.
 */
function copyForOtherUsers(module: string, target: string): string {
  const root = packageRoot(module);
  const inside = (path: string) => join(target, relative(root, path));
  cpSync(join(root, 'package.json'), inside(join(root, 'package.json')));
  const modules = [module];
  const seen = new Set(modules);
  const packages: string[] = [];
  for (let file = modules.pop(); file !== undefined; file = modules.pop()) {
    cpSync(file, inside(file));
    for (const specifier of importedSpecifiers(readFileSync(file, 'utf8'))) {
      if (specifier.startsWith('.')) {
        const path = resolve(dirname(file), specifier);
        if (!seen.has(path) && existsSync(path)) {
          seen.add(path);
          modules.push(path);
        }
      } else if (!isBuiltin(specifier)) {
        const found = packageDirectory(dirname(file), specifier, root);
        if (found !== null) packages.push(found);
      }
    }
  }
  for (let dir = packages.pop(); dir !== undefined; dir = packages.pop()) {
    if (seen.has(dir)) continue;
    seen.add(dir);
    cpSync(dir, inside(dir), { recursive: true, dereference: true });
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string> | undefined
    >;
    for (const name of Object.keys({
      ...manifest.dependencies,
      ...manifest.optionalDependencies,
      ...manifest.peerDependencies,
    })) {
      const found = packageDirectory(dir, name, root);
      if (found !== null) packages.push(found);
    }
  }
  for (const entry of readdirSync(target, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isDirectory()) chmodSync(path, 0o755);
    else if (entry.isFile()) chmodSync(path, statSync(path).mode | 0o444);
  }
  return inside(module);
}

/** The module specifiers in compiled JavaScript: `from '…'`, `import '…'`, `import('…')`. */
function importedSpecifiers(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/\b(?:from|import)\s*\(?\s*(['"])([^'"\n]+)\1/g)) {
    found.push(match[2] as string);
  }
  return found;
}

/** The directory with the package.json that governs `file`. */
function packageRoot(file: string): string {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${file}`);
  }
}

/**
 * The directory of the package `specifier` names, looked up as Node does (node_modules in
 * `from` and each parent), within `root`; null when not found there.
 */
function packageDirectory(from: string, specifier: string, root: string): string | null {
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
  for (let dir = from; dir === root || dir.startsWith(root + sep); dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
  }
  return null;
}
