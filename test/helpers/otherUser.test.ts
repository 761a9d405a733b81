/**
 * The helper that runs code as another user works wherever the checkout lives: a clone
 * inside a directory other users cannot enter (`mktemp -d`, `/root` and a Debian 12 home
 * directory are 0700) still lets the other user import the module under test, its
 * relative imports and its packages.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { OTHER_USER_UNAVAILABLE, runAsUser } from './otherUser.js';
import { tempDir } from './process.js';

/** Writes `files` (path relative to `root` → content), creating directories on the way. */
async function writeTree(root: string, files: Record<string, string>): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), content);
  }
}

describe('runAsUser', () => {
  test('a module in a checkout under a directory others cannot enter is imported with its relative imports and packages', {
    skip: OTHER_USER_UNAVAILABLE,
  }, async (t) => {
    const home = await tempDir(t, 'portaria-other-user-home-');
    await chmod(home, 0o700);
    const checkout = join(home, 'portaria');
    await writeTree(checkout, {
      'package.json': '{"type":"module"}',
      'dist-test/src/lib/answer.js':
        "import { part } from './part.js';\nimport { more } from 'fixture-dep';\nexport const answer = part + more;\n",
      'dist-test/src/lib/part.js': 'export const part = 40;\n',
      'node_modules/fixture-dep/package.json':
        '{"name":"fixture-dep","type":"module","exports":"./index.js","dependencies":{"fixture-sub":"1"}}',
      'node_modules/fixture-dep/index.js':
        "import { one } from 'fixture-sub';\nexport const more = one + 1;\n",
      'node_modules/fixture-sub/package.json':
        '{"name":"fixture-sub","type":"module","exports":"./index.js"}',
      'node_modules/fixture-sub/index.js': 'export const one = 1;\n',
    });
    const run = runAsUser(
      { uid: 1002, gid: 1002, groups: [] },
      join(checkout, 'dist-test/src/lib/answer.js'),
      'return m.answer;',
    );
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.trim(), '42');
  });
});
