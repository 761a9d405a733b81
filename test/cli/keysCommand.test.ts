import assert from 'node:assert/strict';
import { createPrivateKey } from 'node:crypto';
import { chmod, chown, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadKeyRing } from '../../src/keys/loadKeyRing.js';
import { ManualClock } from '../../src/lib/clock.js';
import { OTHER_USER_UNAVAILABLE, runAsUser, sourceModule } from '../helpers/otherUser.js';
import { runCli, tempDir } from '../helpers/runCli.js';

const T0 = Date.UTC(2026, 0, 1);
const KID = /^\d{8}T\d{6}Z-[0-9a-f]{8}$/;

async function generated(cwd: string, dir: string): Promise<string> {
  const result = await runCli(['keys', 'generate', '--keys-dir', dir], { cwd });
  assert.equal(result.code, 0, result.stderr);
  return /^kid: +(\S+)$/m.exec(result.stdout)?.[1] ?? '';
}

/** The table's cells, after checking that every column starts where its header does. */
function cells(table: string): string[][] {
  const lines = table.split('\n');
  assert.equal(lines.pop(), '');
  const starts = [...(lines[0] ?? '').matchAll(/\S+/g)].map((m) => m.index);
  for (const line of lines) {
    assert.deepEqual(
      [...line.matchAll(/\S+/g)].map((m) => m.index),
      starts,
      line,
    );
  }
  return lines.map((line) => line.split(/ {2,}/));
}

function rotate(cwd: string, dir: string, now: string, ...more: string[]) {
  return runCli(['keys', 'rotate', '--keys-dir', dir, '--now', now, ...more], { cwd });
}

describe('portaria keys rotate', () => {
  test('adds a key published now that signs after max-age + skew, and schedules the old key out', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    const result = await rotate(
      cwd,
      dir,
      '2026-01-01T00:00:00Z',
      '--jwks-max-age',
      '300',
      '--skew',
      '60',
      '--max-lifetime',
      '3600',
    );
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    const b = /^kid: +(\S+)$/m.exec(result.stdout)?.[1] ?? '';
    assert.match(b, /^20260101T000000Z-[0-9a-f]{8}$/);
    assert.equal(
      result.stdout,
      [
        `kid:        ${b}`,
        'alg:        ES256',
        `path:       ${join(dir, `${b}.pem`)}`,
        'publishAt:  2026-01-01T00:00:00Z',
        'activateAt: 2026-01-01T00:06:00Z',
        `retiring:   ${a} retireAt 2026-01-01T00:06:00Z removeAt 2026-01-01T01:07:00Z`,
        `Rotation scheduled: ${b} is published now and signs from 2026-01-01T00:06:00Z in place of ${a}; ${a} leaves the JWKS at 2026-01-01T01:07:00Z.`,
        'Every gateway must have loaded this directory by 2026-01-01T00:01:00Z (a gateway that loads it later logs "signing key published late").',
        '',
      ].join('\n'),
    );
    assert.deepEqual(JSON.parse(await readFile(join(dir, 'schedule.json'), 'utf8')).keys[b], {
      publishAt: '2026-01-01T00:00:00Z',
      activateAt: '2026-01-01T00:06:00Z',
      retireAt: null,
      removeAt: null,
    });

    const clock = new ManualClock(T0 + 359_999);
    const ring = await loadKeyRing(dir, 'ES256', clock);
    assert.equal(ring.signingKey.kid, a);
    assert.deepEqual(
      ring.jwks().keys.map((k) => k.kid),
      [a, b].sort().reverse(),
    );
    clock.advance(1);
    assert.equal(ring.signingKey.kid, b);
  });

  test('defaults to max-age 300, skew 60 and a maximum lifetime of one day', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    const result = await rotate(cwd, dir, '2026-01-01T00:00:00Z');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^activateAt: 2026-01-01T00:06:00Z$/m);
    assert.ok(
      result.stdout.includes(
        `retiring:   ${a} retireAt 2026-01-01T00:06:00Z removeAt 2026-01-02T00:07:00Z\n`,
      ),
    );
  });

  test('refuses a second rotation while one is pending, and changes nothing', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    await generated(cwd, dir);
    const first = await rotate(cwd, dir, '2026-01-01T00:00:00Z');
    assert.equal(first.code, 0, first.stderr);
    const b = /^kid: +(\S+)$/m.exec(first.stdout)?.[1] ?? '';
    const files = (await readdir(dir)).sort();
    const schedule = await readFile(join(dir, 'schedule.json'), 'utf8');

    const second = await rotate(cwd, dir, '2026-01-01T00:05:59Z');
    assert.equal(second.code, 1);
    assert.equal(second.stdout, '');
    assert.equal(
      second.stderr,
      `portaria: keys rotate: a rotation is already pending: ${b} activates at 2026-01-01T00:06:00Z (see "portaria keys list")\n`,
    );
    assert.deepEqual((await readdir(dir)).sort(), files);
    assert.equal(await readFile(join(dir, 'schedule.json'), 'utf8'), schedule);

    // Once the new key signs, the next rotation may start.
    const third = await rotate(cwd, dir, '2026-01-01T00:06:00Z');
    assert.equal(third.code, 0, third.stderr);
    assert.ok(third.stdout.includes(`in place of ${b};`), third.stdout);
  });

  test('refuses a directory without a key to rotate from', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'absent');
    const result = await rotate(cwd, dir, '2026-01-01T00:00:00Z');
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      `portaria: keys rotate: invalid configuration (keys.dir (${dir})):\n  - keys.dir: ${dir} does not exist (create a key with "portaria keys generate --alg ES256")\n`,
    );
    const ed = await runCli(['keys', 'generate', '--alg', 'EdDSA', '--keys-dir', dir], { cwd });
    assert.equal(ed.code, 0, ed.stderr);
    const noEs256 = await rotate(cwd, dir, '2026-01-01T00:00:00Z', '--alg', 'ES256');
    assert.equal(noEs256.code, 1);
    assert.equal(
      noEs256.stderr,
      'portaria: keys rotate: no ES256 key is active now to rotate from (create one with "portaria keys generate --alg ES256")\n',
    );
  });

  test("deleting a retired key's file, as docs/keys-and-issuers.md allows, leaves a directory every command takes", async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    const first = await rotate(cwd, dir, '2026-01-01T00:00:00Z', '--max-lifetime', '3600');
    assert.equal(first.code, 0, first.stderr);
    // a retires at 00:06 and is removed at 01:07; an operator deletes its file after that.
    await rm(join(dir, `${a}.pem`));
    const list = await runCli(
      ['keys', 'list', '--keys-dir', dir, '--now', '2026-01-01T02:00:00Z'],
      {
        cwd,
      },
    );
    assert.equal(list.code, 0, list.stderr);
    assert.ok(!list.stdout.includes(a), list.stdout);
    const second = await rotate(cwd, dir, '2026-01-01T02:00:00Z');
    assert.equal(second.code, 0, second.stderr);
    // The rotation rewrote the schedule without the deleted key's entry.
    const schedule = JSON.parse(await readFile(join(dir, 'schedule.json'), 'utf8')) as {
      keys: Record<string, unknown>;
    };
    assert.equal(schedule.keys[a], undefined);
    assert.equal(Object.keys(schedule.keys).length, 2);
    await loadKeyRing(dir, 'ES256', new ManualClock(Date.UTC(2026, 0, 1, 2)));
  });

  test('without --alg, rotates with the algorithm of the keys in the directory', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const ed = await runCli(['keys', 'generate', '--alg', 'EdDSA', '--keys-dir', dir], { cwd });
    assert.equal(ed.code, 0, ed.stderr);
    const rotated = await rotate(cwd, dir, '2026-01-01T00:00:00Z');
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^alg: +EdDSA$/m);
    const ring = await loadKeyRing(dir, 'EdDSA', new ManualClock(T0 + 3_600_000));
    assert.equal(ring.states().filter((k) => k.alg === 'EdDSA').length, 2);
  });

  test('without --alg, a directory with keys of two algorithms is a usage error', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    for (const alg of ['RS256', 'ES256']) {
      const made = await runCli(['keys', 'generate', '--alg', alg, '--keys-dir', dir], { cwd });
      assert.equal(made.code, 0, made.stderr);
    }
    for (const command of ['rotate', 'list', 'generate']) {
      const result = await runCli(['keys', command, '--keys-dir', dir], { cwd });
      assert.equal(result.code, 2, command);
      assert.equal(
        result.stderr,
        `portaria: keys ${command}: ${dir} holds ES256 and RS256 keys: pass --alg, the gateway's token.algorithm (see "portaria keys ${command} --help")\n`,
      );
    }
  });

  const usage: [string[], string][] = [
    [
      ['--jwks-max-age', 'abc'],
      '--jwks-max-age: must be an integer number of seconds from 0 to 86400',
    ],
    [['--skew', '601'], '--skew: must be an integer number of seconds from 0 to 600'],
    [
      ['--max-lifetime', '0'],
      '--max-lifetime: must be an integer number of seconds from 1 to 86400',
    ],
    [['--now', 'tomorrow'], '--now: must be an ISO 8601 date-time with a time zone'],
    [['--alg', 'HS256'], '--alg must be one of ES256, EdDSA, RS256, PS256'],
    [['extra'], 'unexpected argument "extra"'],
  ];
  for (const [args, message] of usage) {
    test(`exits 2 for: portaria keys rotate ${args.join(' ')}`, async (t) => {
      const cwd = await tempDir(t);
      const result = await runCli(['keys', 'rotate', ...args], { cwd });
      assert.equal(result.code, 2);
      assert.equal(
        result.stderr,
        `portaria: keys rotate: ${message} (see "portaria keys rotate --help")\n`,
      );
    });
  }
});

describe('portaria keys list', () => {
  test("shows each key's state and schedule as the rotation progresses", async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    const rotated = await rotate(cwd, dir, '2026-01-01T00:00:00Z', '--max-lifetime', '3600');
    assert.equal(rotated.code, 0, rotated.stderr);
    const b = /^kid: +(\S+)$/m.exec(rotated.stdout)?.[1] ?? '';

    const list = async (now: string) => {
      const result = await runCli(['keys', 'list', '--keys-dir', dir, '--now', now], { cwd });
      assert.equal(result.code, 0, result.stderr);
      return cells(result.stdout);
    };
    const header = ['KID', 'ALG', 'STATE', 'PUBLISH', 'ACTIVATE', 'RETIRE', 'REMOVE'];
    const epoch = '1970-01-01T00:00:00Z';
    const rowA = (state: string) => [
      a,
      'ES256',
      state,
      epoch,
      epoch,
      '2026-01-01T00:06:00Z',
      '2026-01-01T01:07:00Z',
    ];
    const rowB = (state: string) => [
      b,
      'ES256',
      state,
      '2026-01-01T00:00:00Z',
      '2026-01-01T00:06:00Z',
      'never',
      'never',
    ];
    assert.deepEqual(await list('2026-01-01T00:05:59Z'), [header, rowA('active'), rowB('pending')]);
    assert.deepEqual(await list('2026-01-01T00:06:00Z'), [
      header,
      rowA('retiring'),
      rowB('active'),
    ]);
    assert.deepEqual(await list('2026-01-01T01:07:00Z'), [header, rowA('retired'), rowB('active')]);
  });

  test('lists keys without a schedule entry as always published and active', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    const result = await runCli(['keys', 'list', '--keys-dir', dir], { cwd });
    assert.equal(result.code, 0, result.stderr);
    assert.match(a, KID);
    assert.equal(
      result.stdout,
      `KID                        ALG    STATE   PUBLISH  ACTIVATE  RETIRE  REMOVE\n${a}  ES256  active  always   always    never   never\n`,
    );
  });

  test('without --alg, lists with the algorithm of the keys in the directory', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const made = await runCli(['keys', 'generate', '--alg', 'EdDSA', '--keys-dir', dir], {
      cwd,
    });
    assert.equal(made.code, 0, made.stderr);
    const result = await runCli(['keys', 'list', '--keys-dir', dir], { cwd });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(
      cells(result.stdout)
        .slice(1)
        .map((row) => row.slice(1, 3)),
      [['EdDSA', 'active']],
    );
  });

  test('reports a broken schedule.json with every problem', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    await generated(cwd, dir);
    await writeFile(
      join(dir, 'schedule.json'),
      JSON.stringify({
        keys: { ghost: { publishAt: '2026-01-01T00:00:00Z', activateAt: 'soon' } },
      }),
    );
    const result = await runCli(['keys', 'list', '--keys-dir', dir], { cwd });
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      [
        `portaria: keys list: invalid configuration (keys.dir (${dir})):`,
        `  - keys.dir (${dir})/schedule.json: keys.ghost.activateAt: must be an ISO 8601 date-time with a time zone (2026-01-01T00:00:00Z)`,
        '',
      ].join('\n'),
    );
  });
});

describe('portaria keys help', () => {
  const helps: [string[], string][] = [
    [['keys', 'rotate', '--help'], 'Usage: portaria keys rotate [--alg ES256|EdDSA|RS256|PS256]'],
    [
      ['keys', 'list', '-h'],
      'Usage: portaria keys list [--alg ES256|EdDSA|RS256|PS256] [-o json]\n',
    ],
  ];
  for (const [args, start] of helps) {
    test(`prints help for: portaria ${args.join(' ')}`, async (t) => {
      const cwd = await tempDir(t);
      const result = await runCli(args, { cwd });
      assert.equal(result.code, 0);
      assert.ok(result.stdout.startsWith(start), result.stdout);
    });
  }

  test('lists rotate and list among the keys commands, and points generate users to rotate', async (t) => {
    const cwd = await tempDir(t);
    const keys = await runCli(['keys', '--help'], { cwd });
    assert.match(keys.stdout, /^ {2}rotate /m);
    assert.match(keys.stdout, /^ {2}list /m);
    const generate = await runCli(['keys', 'generate', '--help'], { cwd });
    assert.match(generate.stdout, /portaria keys rotate/);
  });
});

describe('portaria keys remove', () => {
  const removeKid = (cwd: string, dir: string, kid: string, now: string) =>
    runCli(['keys', 'remove', kid, '--keys-dir', dir, '--now', now], { cwd });
  const ringAt = (dir: string, iso: string) =>
    loadKeyRing(dir, 'ES256', new ManualClock(Date.parse(iso)));

  test('removes a retiring key: its file and schedule entry go, the ring no longer has it', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    const rotated = await rotate(cwd, dir, '2026-01-01T00:00:00Z');
    assert.equal(rotated.code, 0, rotated.stderr);
    // At 00:10 the new key signs and a retires (still published until its removeAt).
    assert.ok((await ringAt(dir, '2026-01-01T00:10:00Z')).states().some((k) => k.kid === a));
    const result = await removeKid(cwd, dir, a, '2026-01-01T00:10:00Z');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`^removed: +${a} \\(ES256\\)$`, 'm'));
    assert.ok(!(await readdir(dir)).includes(`${a}.pem`));
    const schedule = JSON.parse(await readFile(join(dir, 'schedule.json'), 'utf8')) as {
      keys: Record<string, unknown>;
    };
    assert.equal(schedule.keys[a], undefined);
    const ring = await ringAt(dir, '2026-01-01T00:10:00Z');
    assert.ok(!ring.states().some((k) => k.kid === a));
  });

  test('refuses to remove the key that signs now when no other key would take over', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    const before = await readdir(dir);
    const result = await removeKid(cwd, dir, a, '2026-01-01T00:00:00Z');
    assert.equal(result.code, 1);
    assert.match(result.stderr, /is the ES256 key that signs now and no other key would take over/);
    assert.deepEqual(await readdir(dir), before);
  });

  test('a compromised signing key: rotate with max-age 0, then remove it once every clock agrees', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    const rotated = await rotate(cwd, dir, '2026-01-01T00:00:00Z', '--jwks-max-age', '0');
    assert.equal(rotated.code, 0, rotated.stderr);
    const b = /^kid: +(\S+)$/m.exec(rotated.stdout)?.[1] ?? '';
    // b signs from 00:01:00 (the skew); a replica 60 s behind sees it signing at 00:02:00.
    const early = await removeKid(cwd, dir, a, '2026-01-01T00:00:30Z');
    assert.equal(early.code, 1);
    assert.match(early.stderr, /is the ES256 key that signs now and no other key would take over/);
    const behind = await removeKid(cwd, dir, a, '2026-01-01T00:01:00Z');
    assert.equal(behind.code, 1);
    assert.match(
      behind.stderr,
      new RegExp(
        `${a} still signs on a gateway whose clock is up to the skew \\(60 s\\) behind; ${b} takes over everywhere at 2026-01-01T00:02:00Z`,
      ),
    );
    assert.ok((await readdir(dir)).includes(`${a}.pem`), 'nothing removed yet');
    const result = await removeKid(cwd, dir, a, '2026-01-01T00:02:00Z');
    assert.equal(result.code, 0, result.stderr);
    // Every replica, its clock up to the skew behind, still has a signer.
    for (const at of ['2026-01-01T00:01:00Z', '2026-01-01T00:02:00Z']) {
      const ring = await ringAt(dir, at);
      assert.equal(ring.signingKey.kid, b, at);
    }
  });

  test('removing the pending key of a rotation cancels it: the old key keeps signing', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    const rotated = await rotate(cwd, dir, '2026-01-01T00:00:00Z');
    assert.equal(rotated.code, 0, rotated.stderr);
    const b = /^kid: +(\S+)$/m.exec(rotated.stdout)?.[1] ?? '';
    // b would sign from 00:06, when a retires. Removed before that:
    const result = await removeKid(cwd, dir, b, '2026-01-01T00:01:00Z');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`^Rotation cancelled: ${a} keeps signing`, 'm'));
    const schedule = JSON.parse(await readFile(join(dir, 'schedule.json'), 'utf8')) as {
      keys: Record<string, { retireAt: unknown; removeAt: unknown }>;
    };
    assert.equal(schedule.keys[b], undefined);
    assert.deepEqual([schedule.keys[a]?.retireAt, schedule.keys[a]?.removeAt], [null, null]);
    // Before, a retired at 00:06 with no successor: no signing key on any replica.
    for (const at of ['2026-01-01T00:06:00Z', '2026-01-02T00:07:00Z', '2027-01-01T00:00:00Z']) {
      assert.equal((await ringAt(dir, at)).signingKey.kid, a, at);
    }
    // And a new rotation can be scheduled.
    const again = await rotate(cwd, dir, '2026-01-01T00:02:00Z');
    assert.equal(again.code, 0, again.stderr);
  });

  test('refuses a removal that would leave no signing key at a later moment', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    const b = await generated(cwd, dir);
    // By hand: a retires at 02:00; b takes over at 01:00 — not at a's retirement, so its
    // removal is no cancelled rotation.
    await writeFile(
      join(dir, 'schedule.json'),
      JSON.stringify({
        keys: {
          [a]: {
            publishAt: '2025-12-31T00:00:00Z',
            activateAt: '2025-12-31T00:00:00Z',
            retireAt: '2026-01-01T02:00:00Z',
            removeAt: '2026-01-02T03:00:00Z',
          },
          [b]: {
            publishAt: '2026-01-01T00:00:00Z',
            activateAt: '2026-01-01T01:00:00Z',
            retireAt: null,
            removeAt: null,
          },
        },
      }),
    );
    const before = await readdir(dir);
    const result = await removeKid(cwd, dir, b, '2026-01-01T00:00:00Z');
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      new RegExp(`removing ${b} would leave no ES256 key signing from 2026-01-01T02:00:00Z`),
    );
    assert.deepEqual(await readdir(dir), before);
  });

  test('finishes a removal cut short: an entry whose file is gone is removed too', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    assert.equal((await rotate(cwd, dir, '2026-01-01T00:00:00Z')).code, 0);
    await rm(join(dir, `${a}.pem`));
    // Still due to be published: the loader refuses the entry without a file.
    await assert.rejects(ringAt(dir, '2026-01-01T00:10:00Z'), /no key file/);
    const result = await removeKid(cwd, dir, a, '2026-01-01T00:10:00Z');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^files: +schedule\.json$/m);
    await ringAt(dir, '2026-01-01T00:10:00Z');
  });

  test('an unknown kid, or no kid, is an error', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    await generated(cwd, dir);
    const unknown = await removeKid(cwd, dir, 'nope', '2026-01-01T00:00:00Z');
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no key nope in /);
    const missing = await runCli(['keys', 'remove', '--keys-dir', dir], { cwd });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /missing <kid>/);
    const bad = await removeKid(cwd, dir, '../x', '2026-01-01T00:00:00Z');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /is not a kid/);
  });
});

describe('key files written by the CLI', () => {
  test('take the owner and permissions of the keys already in the directory', {
    skip: OTHER_USER_UNAVAILABLE,
  }, async (t) => {
    // The gateway (uid 10001) reads the keys through group 2000; root runs the CLI.
    const cwd = await tempDir(t);
    await chmod(cwd, 0o755);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    await chown(dir, 10001, 2000);
    await chmod(dir, 0o750);
    await chown(join(dir, `${a}.pem`), 10001, 2000);
    await chmod(join(dir, `${a}.pem`), 0o640);
    const rotated = await rotate(cwd, dir, '2026-01-01T00:00:00Z');
    assert.equal(rotated.code, 0, rotated.stderr);
    for (const name of await readdir(dir)) {
      const info = await stat(join(dir, name));
      assert.deepEqual([info.uid, info.gid, info.mode & 0o777], [10001, 2000, 0o640], name);
    }
    const load = runAsUser(
      { uid: 10002, gid: 10002, groups: [2000] },
      sourceModule('keys/loadKeyRing.js'),
      `const d = await m.readKeyDirectory(${JSON.stringify(dir)}, ${Date.UTC(2026, 0, 1)}); return d.keys.length;`,
    );
    assert.equal(load.status, 0, load.stderr);
    assert.equal(load.stdout.trim(), '2');
  });
});

describe('a key of another algorithm than the configured one', () => {
  test('keys list shows it unused, and keys remove takes it out (list and remove agree)', async (t) => {
    const cwd = await tempDir(t);
    const config = join(cwd, 'portaria.yaml');
    await writeFile(config, 'token:\n  algorithm: ES256\nkeys:\n  dir: keys\n');
    const run = (...args: string[]) => runCli(['keys', ...args, '--config', config], { cwd });
    const es = await run('generate');
    assert.equal(es.code, 0, es.stderr);
    const signer = /^kid: +(\S+)$/m.exec(es.stdout)?.[1] ?? '';
    const ed = await run('generate', '--alg', 'EdDSA');
    assert.equal(ed.code, 0, ed.stderr);
    assert.equal(
      ed.stderr,
      'warning: the configuration signs with ES256 (token.algorithm): this EdDSA key is published but never signs there ("keys list" shows it unused)\n',
    );
    const stray = /^kid: +(\S+)$/m.exec(ed.stdout)?.[1] ?? '';

    const listed = await run('list');
    assert.equal(listed.code, 0, listed.stderr);
    const [table, ...notes] = listed.stdout.split('\n\n');
    const rows = cells(`${table}\n`);
    assert.deepEqual(
      rows.map((r) => r.slice(0, 3)),
      [
        ['KID', 'ALG', 'STATE'],
        ...[
          [signer, 'ES256', 'active'],
          [stray, 'EdDSA', 'unused'],
        ].sort((a, b) => ((a[0] ?? '') < (b[0] ?? '') ? 1 : -1)),
      ],
    );
    assert.equal(
      notes.join('\n\n'),
      'unused: algorithm EdDSA ≠ configured ES256 (token.algorithm): such a key never signs here; "portaria keys remove <kid>" takes it out.\n',
    );

    const removed = await run('remove', stray);
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, new RegExp(`^removed: +${stray} \\(EdDSA\\)$`, 'm'));
    assert.deepEqual(
      (await readdir(join(cwd, 'keys'))).filter((n) => n.endsWith('.pem')),
      [`${signer}.pem`],
    );
    const refused = await run('remove', signer);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /is the ES256 key that signs now/);
  });
});

describe('PS256 keys and a rotation from ES256 to PS256', () => {
  test('keys generate --alg PS256 writes an RSASSA-PSS key restricted to PS256', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const made = await runCli(['keys', 'generate', '--alg', 'PS256', '--keys-dir', dir], { cwd });
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stdout, /^alg: +PS256$/m);
    const kid = /^kid: +(\S+)$/m.exec(made.stdout)?.[1] ?? '';
    const key = createPrivateKey(await readFile(join(dir, `${kid}.pem`), 'utf8'));
    assert.equal(key.asymmetricKeyType, 'rsa-pss');
    assert.deepEqual(key.asymmetricKeyDetails, {
      modulusLength: 3072,
      publicExponent: 65537n,
      hashAlgorithm: 'sha256',
      mgf1HashAlgorithm: 'sha256',
      saltLength: 32,
    });
    // The directory's one algorithm is then the default of the other commands.
    const listed = await runCli(['keys', 'list', '--keys-dir', dir, '-o', 'json'], { cwd });
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as { alg: string; state: string }[]).map((k) => [k.alg, k.state]),
      [['PS256', 'active']],
    );
  });

  test('keys rotate --to PS256 under an ES256 configuration: list, and remove cancelling it', async (t) => {
    const cwd = await tempDir(t);
    const config = join(cwd, 'portaria.yaml');
    await writeFile(config, 'token:\n  algorithm: ES256\nkeys:\n  dir: keys\n');
    const run = (...args: string[]) => runCli(['keys', ...args, '--config', config], { cwd });
    const es = await run('generate');
    assert.equal(es.code, 0, es.stderr);
    const a = /^kid: +(\S+)$/m.exec(es.stdout)?.[1] ?? '';

    const bad = await run('rotate', '--to', 'HS256');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--to must be one of ES256, EdDSA, RS256, PS256/);

    const now = '2026-01-01T00:00:00Z';
    const rotated = await run('rotate', '--to', 'PS256', '--now', now, '--max-lifetime', '3600');
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^alg: +PS256$/m);
    const b = /^kid: +(\S+)$/m.exec(rotated.stdout)?.[1] ?? '';
    assert.match(
      rotated.stdout,
      new RegExp(
        `^retiring: +${a} retireAt 2026-01-01T00:06:00Z removeAt 2026-01-01T01:07:00Z$`,
        'm',
      ),
    );

    const states = async (at: string) => {
      const listed = await run('list', '--now', at, '-o', 'json');
      assert.equal(listed.code, 0, listed.stderr);
      const keys = JSON.parse(listed.stdout) as { kid: string; alg: string; state: string }[];
      return Object.fromEntries(keys.map((k) => [k.kid, `${k.alg} ${k.state}`]));
    };
    assert.deepEqual(await states('2026-01-01T00:05:59Z'), {
      [a]: 'ES256 active',
      [b]: 'PS256 pending',
    });
    assert.deepEqual(await states('2026-01-01T00:06:00Z'), {
      [a]: 'ES256 retiring',
      [b]: 'PS256 active',
    });

    // Removing the pending PS256 key cancels the rotation: the ES256 key keeps signing.
    const removed = await run('remove', b, '--now', '2026-01-01T00:01:00Z');
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, new RegExp(`^Rotation cancelled: ${a} keeps signing`, 'm'));
    assert.deepEqual(await states('2026-01-01T02:00:00Z'), { [a]: 'ES256 active' });
  });
});

describe('portaria keys list -o json', () => {
  test('one array, newest kid first, with kid, alg, state and the schedule as UTC instants or null', async (t) => {
    const cwd = await tempDir(t);
    const dir = join(cwd, 'keys');
    const a = await generated(cwd, dir);
    const rotated = await rotate(cwd, dir, '2026-01-01T00:00:00Z', '--max-lifetime', '3600');
    assert.equal(rotated.code, 0, rotated.stderr);
    const b = /^kid: +(\S+)$/m.exec(rotated.stdout)?.[1] ?? '';
    const r = await runCli(
      ['keys', 'list', '--keys-dir', dir, '--now', '2026-01-01T00:01:00Z', '-o', 'json'],
      { cwd },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), [
      {
        kid: a,
        alg: 'ES256',
        state: 'active',
        publishAt: '1970-01-01T00:00:00Z',
        activateAt: '1970-01-01T00:00:00Z',
        retireAt: '2026-01-01T00:06:00Z',
        removeAt: '2026-01-01T01:07:00Z',
      },
      {
        kid: b,
        alg: 'ES256',
        state: 'pending',
        publishAt: '2026-01-01T00:00:00Z',
        activateAt: '2026-01-01T00:06:00Z',
        retireAt: null,
        removeAt: null,
      },
    ]);
  });
});
