import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import {
  type KeySchedule,
  parseInstant,
  parseKeySchedule,
  readKeySchedule,
  serializeKeySchedule,
  writeKeySchedule,
} from '../../src/keys/keySchedule.js';

const T0 = Date.UTC(2026, 0, 1);

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-schedule-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('parseKeySchedule', () => {
  test('reads ISO 8601 times with a zone, and null or absent retireAt/removeAt as never', () => {
    const { schedule, problems } = parseKeySchedule(
      JSON.stringify({
        keys: {
          a: {
            publishAt: '2026-01-01T00:00:00Z',
            activateAt: '2026-01-01T01:06:00.5+01:00',
            retireAt: '2026-01-01T00:10:00.000Z',
            removeAt: '2026-01-01T01:10:00Z',
          },
          b: {
            publishAt: '2026-01-01T00:00:00Z',
            activateAt: '2026-01-01T00:06:00Z',
            retireAt: null,
          },
        },
      }),
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(schedule.get('a'), {
      publishAt: T0,
      activateAt: T0 + 6 * 60_000 + 500,
      retireAt: T0 + 10 * 60_000,
      removeAt: T0 + 70 * 60_000,
    });
    assert.deepEqual(schedule.get('b'), {
      publishAt: T0,
      activateAt: T0 + 6 * 60_000,
      retireAt: null,
      removeAt: null,
    });
  });

  test('reports every problem of every entry, with its path', () => {
    const ok = '2026-01-01T00:00:00Z';
    const later = '2026-01-02T00:00:00Z';
    const { schedule, problems } = parseKeySchedule(
      JSON.stringify({
        version: 2,
        keys: {
          early: { publishAt: later, activateAt: ok },
          retireFirst: { publishAt: ok, activateAt: later, retireAt: ok, removeAt: later },
          removeFirst: { publishAt: ok, activateAt: ok, retireAt: later, removeAt: ok },
          removeNoRetire: { publishAt: ok, activateAt: ok, removeAt: later },
          missing: { activateAt: ok },
          nullPublish: { publishAt: null, activateAt: ok },
          badDate: { publishAt: '2026-02-30T00:00:00Z', activateAt: 'tomorrow', retireAt: 5 },
          extra: { publishAt: ok, activateAt: ok, expireAt: ok },
          notObject: [ok],
          fine: { publishAt: ok, activateAt: ok },
        },
      }),
    );
    const iso = 'must be an ISO 8601 date-time with a time zone (2026-01-01T00:00:00Z)';
    assert.deepEqual(problems, [
      'version: unknown field (only "keys")',
      'keys.early.activateAt: must not be before publishAt (publish ahead, then sign)',
      'keys.retireFirst.retireAt: must not be before activateAt',
      'keys.removeFirst.removeAt: must not be before retireAt (its tokens must keep verifying)',
      'keys.removeNoRetire.removeAt: must be null while retireAt is null (a signing key stays published)',
      'keys.missing.publishAt: missing (an ISO 8601 date-time, 2026-01-01T00:00:00Z)',
      'keys.nullPublish.publishAt: must be an ISO 8601 date-time, not null',
      `keys.badDate.publishAt: ${iso}`,
      `keys.badDate.activateAt: ${iso}`,
      `keys.badDate.retireAt: ${iso} or null`,
      'keys.extra.expireAt: unknown field (only publishAt, activateAt, retireAt, removeAt)',
      'keys.notObject: must be an object with publishAt, activateAt, retireAt, removeAt',
    ]);
    assert.deepEqual([...schedule.keys()], ['fine']);
  });

  const broken: [string, string][] = [
    ['{', 'not valid JSON'],
    ['[]', 'must be a JSON object with "keys"'],
    ['{}', 'keys: must be an object of schedules by kid'],
    ['{"keys": []}', 'keys: must be an object of schedules by kid'],
  ];
  for (const [text, problem] of broken) {
    test(`refuses the file ${text}`, () => {
      assert.deepEqual(parseKeySchedule(text).problems, [problem]);
    });
  }
});

describe('parseInstant', () => {
  const refused = [
    '2026-02-30T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T00:00:00',
    '2026-01-01',
    '2026-01-01 00:00:00Z',
    '2026-01-01T00:00:00.1234Z',
    '2026-01-01T00:00:00+24:00',
    ' 2026-01-01T00:00:00Z',
  ];
  for (const text of refused) {
    test(`refuses ${JSON.stringify(text)}`, () => assert.equal(parseInstant(text), undefined));
  }
  test('reads UTC and offsets to the same instant', () => {
    assert.equal(parseInstant('2026-01-01T00:00:00Z'), T0);
    assert.equal(parseInstant('2026-01-01T01:00:00+01:00'), T0);
    assert.equal(parseInstant('2025-12-31T23:59:59.999-00:00'), T0 - 1);
  });
});

describe('writeKeySchedule', () => {
  const schedule = new Map<string, KeySchedule>([
    ['b', { publishAt: T0, activateAt: T0 + 360_000, retireAt: null, removeAt: null }],
    ['__proto__', { publishAt: 0, activateAt: 0, retireAt: T0 + 1, removeAt: T0 + 2 }],
  ]);

  test('writes sorted kids with ISO times (0600), replaces the file, and leaves no temporary', async (t) => {
    const dir = await tempDir(t);
    await writeFile(join(dir, 'schedule.json'), '{"keys":{}}', { mode: 0o600 });
    await writeKeySchedule(dir, schedule);
    const text = await readFile(join(dir, 'schedule.json'), 'utf8');
    assert.equal(text, serializeKeySchedule(schedule));
    const keys = JSON.parse(text).keys as Record<string, unknown>;
    assert.deepEqual(keys.b, {
      publishAt: '2026-01-01T00:00:00Z',
      activateAt: '2026-01-01T00:06:00Z',
      retireAt: null,
      removeAt: null,
    });
    assert.deepEqual(Object.getOwnPropertyDescriptor(keys, '__proto__')?.value, {
      publishAt: '1970-01-01T00:00:00Z',
      activateAt: '1970-01-01T00:00:00Z',
      retireAt: '2026-01-01T00:00:00.001Z',
      removeAt: '2026-01-01T00:00:00.002Z',
    });
    assert.deepEqual(Object.keys(JSON.parse(text).keys), ['__proto__', 'b']);
    assert.equal((await stat(join(dir, 'schedule.json'))).mode & 0o777, 0o600);
    assert.deepEqual(await readdir(dir), ['schedule.json']);
  });

  test('reads back what it wrote', async (t) => {
    const dir = await tempDir(t);
    await writeKeySchedule(dir, schedule);
    const read = await readKeySchedule(dir);
    assert.deepEqual(read.problems, []);
    assert.deepEqual(read.schedule, schedule);
  });

  test('reads a missing file as an empty schedule, and prefixes problems with the path', async (t) => {
    const dir = await tempDir(t);
    assert.deepEqual(await readKeySchedule(dir), { schedule: new Map(), problems: [] });
    await writeFile(join(dir, 'schedule.json'), '{');
    assert.deepEqual((await readKeySchedule(dir)).problems, [
      `keys.dir (${dir})/schedule.json: not valid JSON`,
    ]);
  });
});
