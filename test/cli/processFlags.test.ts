/** The gateway binary's own flags (`node dist/main.js --version`), run as a child process. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { MAIN_JS, runToEnd, testEnv } from '../helpers/process.js';

const run = (args: string[]) =>
  runToEnd(process.execPath, [MAIN_JS, ...args], { cwd: process.cwd(), env: testEnv() });

describe('the gateway process flags', () => {
  test('--version and -V print the package version and exit 0', async () => {
    const pkg = JSON.parse(
      await readFile(new URL('../../../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = await run([flag]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `portaria ${pkg.version}\n`);
      assert.equal(r.stderr, '');
    }
  });

  test('--help and -h print the usage on stdout and exit 0', async () => {
    for (const flag of ['--help', '-h']) {
      const r = await run([flag]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^Usage: node dist\/main\.js --config FILE \| --demo\n/);
      assert.match(r.stdout, /-V, --version/);
      assert.equal(r.stderr, '');
    }
  });

  test('an unknown flag prints the usage on stderr and exits 2', async () => {
    const r = await run(['--verison']);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^portaria: Unknown option '--verison'/);
    assert.match(r.stderr, /\nUsage: node dist\/main\.js --config FILE \| --demo\n/);
  });
});
