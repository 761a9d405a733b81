/**
 * Tests let their servers choose a port (listen on 0) and read it back; none finds a free
 * port, releases it and has something bind it later, which races with the test files
 * running beside it (test/README.md, Ports). Reads the test sources as text.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** This file's own examples. */
const EXEMPT = new Set(['test/architecture/testPorts.test.ts']);

/** A helper named for handing out a port nothing listens on any more. */
const PORT_FINDER = /function\s+(freePort|closedPort|getPort|unusedPort|findFreePort)\b/;
/** A server listened on port 0, its port read, then closed: the port is free again. */
const RELEASED = /\.listen\(\s*0\b[\s\S]{0,300}?\.address\(\)[\s\S]{0,200}?\.close\(/;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The offending files, each with what gave it away. */
function portReleases(files: readonly string[]): string[] {
  const found: string[] = [];
  for (const file of files) {
    const name = relative(root, file);
    if (EXEMPT.has(name)) continue;
    const text = readFileSync(file, 'utf8');
    const finder = PORT_FINDER.exec(text)?.[1];
    if (finder !== undefined) found.push(`${name}: defines ${finder}()`);
    const released = RELEASED.exec(text)?.[0];
    // Closing in t.after holds the port for the whole test: that is fine.
    if (released !== undefined && !released.includes('t.after')) {
      found.push(`${name}: listens on 0, reads the port, closes the server`);
    }
  }
  return found;
}

test('no test finds a free port and releases it for a later bind', () => {
  assert.deepEqual(portReleases(sources(join(root, 'test'))), []);
});

test('the check recognises a released port, and not one held for the whole test', () => {
  assert.match('async function freePort() { return 1; }', PORT_FINDER);
  assert.match(
    "s.listen(0, '127.0.0.1'); const { port } = s.address(); await new Promise((r) => s.close(r));",
    RELEASED,
  );
  assert.doesNotMatch(
    's.listen(0); t.after(() => s.close()); const { port } = s.address();',
    RELEASED,
  );
});
