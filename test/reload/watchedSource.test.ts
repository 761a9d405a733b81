import assert from 'node:assert/strict';
import {
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from '../../src/config/configError.js';
import {
  type ReloadOutcome,
  type WatchedSourceOptions,
  watchSource,
} from '../../src/reload/watchedSource.js';
import { waitFor } from '../helpers/wait.js';

/** A 90-second poll: only fs.watch can explain a reload within the test's 2 s. */
const NO_POLL_MS = 90_000;

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-reload-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Test loader: `{"version": <number>}`, anything else is a ConfigError. */
async function loadVersion(file: string): Promise<number> {
  const document = JSON.parse(await readFile(file, 'utf8')) as { version?: unknown };
  if (typeof document.version !== 'number') throw new ConfigError(['version: must be a number']);
  return document.version;
}

async function writeAtomically(file: string, text: string): Promise<void> {
  const temp = `${file}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(temp, text);
  await rename(temp, file);
}

interface Harness {
  /** The running value (what apply last received). */
  value: number;
  loads: number;
  applied: number[];
  outcomes: { outcome: ReloadOutcome; problems: readonly string[] }[];
  options: WatchedSourceOptions<number>;
}

function harness(
  paths: readonly string[],
  load: () => Promise<number>,
  extra: Partial<WatchedSourceOptions<number>>,
): Harness {
  const h: Harness = {
    value: 0,
    loads: 0,
    applied: [],
    outcomes: [],
    options: {
      name: 'test',
      paths,
      load: () => {
        h.loads += 1;
        return load();
      },
      apply: (value) => {
        h.value = value;
        h.applied.push(value);
      },
      pollIntervalMs: NO_POLL_MS,
      watch: true,
      onOutcome: (name, outcome, problems) => {
        assert.equal(name, 'test');
        h.outcomes.push({ outcome, problems });
      },
      ...extra,
    },
  };
  return h;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function fsWatchers(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'FSEventWrap').length;
}

describe('watchSource', () => {
  test('applies a file replaced by an atomic rename, seen by fs.watch', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await writeFile(file, '{"version":1}');
    const h = harness([file], () => loadVersion(file), {});
    const source = watchSource(h.options);
    t.after(() => source.close());
    await sleep(50); // the baseline fingerprint
    await writeAtomically(file, '{"version":2}');
    await waitFor('the new version', () => (h.value === 2 ? true : undefined), 2000);
    assert.deepEqual(h.applied, [2]);
    assert.deepEqual(h.outcomes, [{ outcome: 'applied', problems: [] }]);
  });

  test('applies a file written in place, seen by fs.watch', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await writeFile(file, '{"version":1}');
    const h = harness([file], () => loadVersion(file), {});
    const source = watchSource(h.options);
    t.after(() => source.close());
    await sleep(50);
    await writeFile(file, '{"version":3}');
    await waitFor('the new version', () => (h.value === 3 ? true : undefined), 2000);
    assert.equal(h.applied.at(-1), 3);
  });

  test('a file written in place in steps is read once its writer paused, not part-way', async (t) => {
    const file = join(await tempDir(t), 'routes.txt');
    await writeFile(file, 'a\n');
    const seen: string[] = [];
    const h = harness(
      [file],
      async () => {
        const text = await readFile(file, 'utf8');
        seen.push(text);
        return text.length;
      },
      // A quiet time ten times each pause below, so a loaded machine cannot stretch a
      // pause past it.
      { debounceMs: 400 },
    );
    const source = watchSource(h.options);
    t.after(() => source.close());
    await sleep(50);
    const handle = await open(file, 'w');
    // Twelve steps 40 ms apart: the write spans longer than the debounce (a check timed
    // from the first event would read it part-way), each pause is well inside it.
    const lines = Array.from({ length: 12 }, (_, i) => `line ${i}\n`);
    for (const line of lines) {
      await handle.write(line);
      await sleep(40);
    }
    await handle.close();
    await waitFor('the reload', () => (seen.length > 0 ? true : undefined), 3000);
    await sleep(600);
    assert.deepEqual(seen, [lines.join('')], 'one read, of the whole file');
  });

  test('applies a Kubernetes-style ..data symlink swap by polling alone', async (t) => {
    const dir = await tempDir(t);
    await mkdir(join(dir, '..2026_01'));
    await writeFile(join(dir, '..2026_01', 'clients.json'), '{"version":1}');
    await symlink('..2026_01', join(dir, '..data'));
    await symlink(join('..data', 'clients.json'), join(dir, 'clients.json'));
    const file = join(dir, 'clients.json');
    assert.equal(await loadVersion(file), 1);

    const h = harness([file], () => loadVersion(file), { pollIntervalMs: 100, fsWatch: false });
    const source = watchSource(h.options);
    t.after(() => source.close());
    await sleep(50);
    // What the kubelet does: write a new timestamped dir, then swap ..data atomically.
    await mkdir(join(dir, '..2026_02'));
    await writeFile(join(dir, '..2026_02', 'clients.json'), '{"version":2}');
    await symlink('..2026_02', join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));
    await rm(join(dir, '..2026_01'), { recursive: true });

    await waitFor('the swapped version', () => (h.value === 2 ? true : undefined), 2000);
    assert.deepEqual(h.applied, [2]);
    assert.deepEqual(h.outcomes, [{ outcome: 'applied', problems: [] }]);
  });

  test('keeps the running value and reports every problem when the new content is invalid', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await writeFile(file, '{"version":1}');
    const h = harness([file], () => loadVersion(file), { watch: false });
    h.value = 1;
    const source = watchSource(h.options);
    t.after(() => source.close());

    await writeAtomically(file, '{"version":"two"}');
    assert.equal(await source.trigger('poll'), 'failed');
    assert.equal(h.value, 1);
    assert.deepEqual(h.applied, []);
    assert.deepEqual(h.outcomes, [{ outcome: 'failed', problems: ['version: must be a number'] }]);
    assert.equal(await source.trigger('poll'), 'unchanged', 'a broken file is reported once');

    await writeAtomically(file, '{not json');
    assert.equal(await source.trigger('poll'), 'failed');
    assert.match(h.outcomes.at(-1)?.problems[0] ?? '', /JSON/);
    assert.equal(h.value, 1);
  });

  test('failed contents are loaded again after retryFailedMs: a load can fail by the clock alone', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await writeFile(file, '{"version":1}');
    // The loader refuses until "time" has come (a key that activates a moment later).
    let ready = false;
    const h = harness(
      [file],
      async () => {
        if (!ready) throw new ConfigError(['no key is active now']);
        return loadVersion(file);
      },
      { watch: false, retryFailedMs: 100 },
    );
    h.value = 1;
    const source = watchSource(h.options);
    t.after(() => source.close());
    await writeAtomically(file, '{"version":2}');
    assert.equal(await source.trigger('poll'), 'failed');
    assert.equal(await source.trigger('poll'), 'unchanged', 'not on every poll');
    ready = true;
    await sleep(120);
    assert.equal(await source.trigger('poll'), 'applied', 'the same contents, tried again');
    assert.equal(h.value, 2);
    assert.equal(await source.trigger('poll'), 'unchanged');
  });

  test('does not reload identical content rewritten, unless forced by a signal', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await writeFile(file, '{"version":1}');
    const h = harness([file], () => loadVersion(file), { watch: false });
    const source = watchSource(h.options);
    t.after(() => source.close());

    await writeAtomically(file, '{"version":1}');
    assert.equal(await source.trigger('watch'), 'unchanged');
    assert.equal(await source.trigger('poll'), 'unchanged');
    assert.equal(h.loads, 0);
    assert.deepEqual(h.applied, []);
    assert.deepEqual(h.outcomes, []);

    assert.equal(await source.trigger('signal'), 'applied');
    assert.deepEqual(h.applied, [1]);
  });

  test('runs one reload at a time: triggers during a reload share exactly one more run', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await writeFile(file, '{"version":1}');
    const gates = [deferred(), deferred()];
    const h = harness(
      [file],
      async () => {
        await gates[h.loads - 1]?.promise;
        return h.loads;
      },
      { watch: false },
    );
    const source = watchSource(h.options);
    t.after(() => source.close());

    const first = source.trigger('manual');
    await waitFor('the first load', () => (h.loads === 1 ? true : undefined));
    const second = source.trigger('poll');
    const third = source.trigger('signal');
    assert.equal(second, third, 'the queued triggers share one run');
    gates[0]?.resolve();
    assert.equal(await first, 'applied');
    await waitFor('the second load', () => (h.loads === 2 ? true : undefined));
    gates[1]?.resolve();
    // Forced: one of the queued triggers was a signal, though the content did not change.
    assert.equal(await second, 'applied');
    assert.equal(h.loads, 2);
    assert.deepEqual(h.applied, [1, 2]);
  });

  test('retries once when the file is briefly missing, instead of failing', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await writeFile(file, '{"version":1}');
    const h = harness(
      [file],
      async () => {
        try {
          return await loadVersion(file);
        } catch (error) {
          // The rename-over completes while the first load fails.
          if (h.loads === 1) await writeFile(file, '{"version":2}');
          throw error;
        }
      },
      { watch: false },
    );
    const source = watchSource(h.options);
    t.after(() => source.close());
    await sleep(20);

    await rm(file);
    assert.equal(await source.trigger('poll'), 'applied');
    assert.equal(h.loads, 2);
    assert.deepEqual(h.applied, [2]);
    assert.deepEqual(h.outcomes, [{ outcome: 'applied', problems: [] }]);
    assert.equal(await source.trigger('poll'), 'unchanged', 'the retried content is the baseline');
  });

  test('fails when the file stays missing after the retry', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await writeFile(file, '{"version":1}');
    const h = harness([file], () => loadVersion(file), { watch: false });
    const source = watchSource(h.options);
    t.after(() => source.close());
    await sleep(20);

    await rm(file);
    assert.equal(await source.trigger('poll'), 'failed');
    assert.equal(h.loads, 2);
    assert.match(h.outcomes[0]?.problems[0] ?? '', /ENOENT/);
  });

  test('watches a directory: a new file reloads, a dotfile or temporary file does not', async (t) => {
    const dir = join(await tempDir(t), 'keys');
    await mkdir(dir);
    await writeFile(join(dir, 'k1.pem'), 'one');
    const h = harness([dir], async () => (await readdir(dir)).length, {});
    const source = watchSource(h.options);
    t.after(() => source.close());
    await sleep(50);

    await writeFile(join(dir, 'k2.pem'), 'two');
    await waitFor('the new key', () => (h.applied.length === 1 ? true : undefined), 2000);
    assert.deepEqual(h.applied, [2]);

    await writeFile(join(dir, '.hidden'), 'x');
    await writeFile(join(dir, '.k3.pem.abc.tmp'), 'x');
    await writeFile(join(dir, 'k3.pem.tmp'), 'x');
    assert.equal(await source.trigger('poll'), 'unchanged');
    await sleep(300); // the debounced watch check runs, and finds nothing new
    assert.deepEqual(h.applied, [2]);

    await writeFile(join(dir, 'k1.pem'), 'changed');
    assert.equal(await source.trigger('poll'), 'applied', 'a changed file is a change');
  });

  test('a directory source counts only the entries it reads (directoryEntries)', async (t) => {
    const dir = join(await tempDir(t), 'secret');
    await mkdir(dir);
    await writeFile(join(dir, 'k1.pem'), 'one');
    await writeFile(join(dir, 'clients.json'), '{}');
    const h = harness([dir], async () => 1, {
      watch: false,
      directoryEntries: (name) => name.endsWith('.pem'),
    });
    const source = watchSource(h.options);
    t.after(() => source.close());
    await writeFile(join(dir, 'clients.json'), '{"changed":true}');
    assert.equal(await source.trigger('poll'), 'unchanged', 'not one of its entries');
    await writeFile(join(dir, 'k1.pem'), 'two');
    assert.equal(await source.trigger('poll'), 'applied');
  });

  test('a watched directory replaced under its name (symlink switched) is watched anew', async (t) => {
    const root = await tempDir(t);
    await mkdir(join(root, 'rel1'));
    await mkdir(join(root, 'rel2'));
    await writeFile(join(root, 'rel1', 'k1.pem'), 'one');
    await writeFile(join(root, 'rel2', 'k1.pem'), 'two');
    await symlink('rel1', join(root, 'keys'));
    const dir = join(root, 'keys');
    const h = harness([dir], async () => (await readdir(dir)).length, {
      pollIntervalMs: 1500,
    });
    const source = watchSource(h.options);
    t.after(() => source.close());
    await sleep(50);
    // Switch the name to another directory (as a release symlink is): only a poll sees it.
    await symlink('rel2', join(root, 'keys.tmp'));
    await rename(join(root, 'keys.tmp'), dir);
    await waitFor('the poll applies rel2', () => (h.applied.length === 1 ? true : undefined), 3000);
    // A change in the directory the name now leads to is seen by a watcher, well before the
    // next poll (1.5 s away).
    const changed = performance.now();
    await writeFile(join(root, 'rel2', 'k2.pem'), 'new');
    await waitFor('the watcher sees it', () => (h.applied.length === 2 ? true : undefined), 1000);
    assert.ok(performance.now() - changed < 1000);
    assert.deepEqual(h.applied, [1, 2]);
  });

  test('close() stops watchers and timers: nothing reloads afterwards', async (t) => {
    const dir = await tempDir(t);
    const file = join(dir, 'clients.json');
    await writeFile(file, '{"version":1}');
    await sleep(20); // watchers closed by earlier tests finish closing
    const before = fsWatchers();
    const h = harness([file], () => loadVersion(file), { pollIntervalMs: 20 });
    const source = watchSource(h.options);
    assert.equal(fsWatchers(), before + 1, 'one watcher, on the parent directory');
    await sleep(50);
    source.close();
    await sleep(20);
    assert.equal(fsWatchers(), before);

    await writeAtomically(file, '{"version":2}');
    await sleep(300);
    assert.equal(h.loads, 0);
    assert.equal(await source.trigger('manual'), 'unchanged');
    assert.equal(h.loads, 0);
  });
});
