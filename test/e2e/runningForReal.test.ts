/**
 * README.md, "Running it for real", followed literally: the section's shell block is read
 * from the README and run by bash, with only these substitutions (so that the test runs
 * unprivileged, on free ports, against the compiled tree):
 *   - `npm ci && npm run build` is dropped (the tests run the compiled dist-test/ tree),
 *     `npx portaria` and `node dist/main.js` run that tree's CLI and gateway;
 *   - `sudo ` is dropped: creating the data directory is the only step that needs root,
 *     so without it every step must still work (and does, here, as a plain user);
 *   - `/var/lib/portaria` is a temporary directory;
 *   - ports 8080, 9091 and 9000 are other ports, in the commands and in the copy of
 *     config/portaria.production.yaml the block copies: ports below the kernel's
 *     ephemeral range, which no server a test starts on port 0 can be given (the block
 *     names its ports before anything listens, so they cannot be chosen by a bind).
 * It must end with a 200 from the sample upstream through the configuration's route.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { delimiter, dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/fixture.js';
import { MAIN_JS, tempDir, testEnv } from '../helpers/process.js';
import { CLI } from '../helpers/runCli.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * `count` distinct ports nothing listens on now, below the ephemeral range (Linux's
 * ip_local_port_range, where port-0 binds land) and above 1023: only a process naming
 * the same port itself could take one before the block binds it.
 */
async function portsBelowEphemeralRange(count: number): Promise<number[]> {
  const range = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(
    () => '32768 60999',
  );
  const low = Number(range.trim().split(/\s+/)[0]);
  const ports: number[] = [];
  while (ports.length < count) {
    const port = 10_000 + Math.floor(Math.random() * (Math.max(low, 10_001) - 10_000));
    if (port >= low || ports.includes(port) || !(await unused(port))) continue;
    ports.push(port);
  }
  return ports;
}

function unused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** The first ```sh block after the heading `title`. */
function shellBlock(markdown: string, title: string): string {
  const section = markdown.slice(markdown.indexOf(`\n## ${title}\n`));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, `no sh block under "${title}"`);
  return block;
}

describe('README "Running it for real"', () => {
  test('followed literally, it ends with a 200 through a route, state in the data directory', async (t) => {
    const work = await tempDir(t, 'portaria-real-');
    const data = join(work, 'var-lib-portaria');
    const [gatewayPort, adminPort, upstreamPort] = await portsBelowEphemeralRange(3);
    const ports = new Map([
      ['8080', String(gatewayPort)],
      ['9091', String(adminPort)],
      ['9000', String(upstreamPort)],
    ]);
    const onFreePorts = (text: string) =>
      text.replace(/\b(8080|9091|9000)\b/g, (port) => ports.get(port) ?? port);
    const exampleCopy = join(work, 'portaria.production.yaml');
    await writeFile(
      exampleCopy,
      onFreePorts(await readFile(join(ROOT, 'config', 'portaria.production.yaml'), 'utf8')),
    );

    const block = shellBlock(
      await readFile(join(ROOT, 'README.md'), 'utf8'),
      'Running it for real',
    );
    assert.match(block, /^sudo install -d .*\/var\/lib\/portaria/m);
    const script = onFreePorts(block)
      .replace('npm ci && npm run build\n', '')
      .replace(/^sudo /m, '')
      .replaceAll('/var/lib/portaria', data)
      .replaceAll('config/portaria.production.yaml', exampleCopy)
      .replaceAll('npx portaria', `node ${CLI}`)
      .replaceAll('node dist/main.js', `node ${MAIN_JS}`);
    assert.ok(!script.includes('sudo'), script);

    const env = testEnv({ PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH}` });
    // Its own process group: the gateway and the upstream it starts in the background are
    // ended with it.
    const child = spawn('bash', ['-e', '-c', script], { cwd: work, env, detached: true });
    t.after(() => {
      try {
        process.kill(-(child.pid as number), 'SIGTERM');
      } catch {
        // Already gone.
      }
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => process.kill(-(child.pid as number), 'SIGKILL'), 90_000);
    const [code] = (await once(child, 'exit')) as [number | null];
    clearTimeout(timer);
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    assert.match(stdout, /^HTTP\/1\.1 200 /m, stdout);
    assert.match(stdout, /^upstream got \/orders\/42$/m);
    assert.match(stdout, /^ok: /m, 'config check passed');
    const state = (await readdir(data)).sort();
    for (const name of ['admin-token', 'clients.json', 'keys', 'portaria.yaml']) {
      assert.ok(state.includes(name), `${name} not in ${state.join(', ')}`);
    }
  });
});

describe('a gateway with nothing to forward to', () => {
  test('says so in its log at start: a warn line naming the routes setting', async (t) => {
    const gateway = await startGateway(t, { settings: () => ({ upstream: { default: null } }) });
    const warnings = gateway.logs
      .map((line) => JSON.parse(line) as { level: unknown; msg: string; setting?: string })
      .filter((line) => line.setting === 'routes');
    assert.equal(warnings.length, 1, gateway.logs.join('\n'));
    assert.equal(warnings[0]?.level, 'warn');
    assert.match(warnings[0]?.msg ?? '', /^no routes and no upstream\.default: /);
  });

  test('a gateway with a route says nothing of the kind', async (t) => {
    const gateway = await startGateway(t);
    assert.ok(!gateway.logs.some((line) => line.includes('no routes and no upstream.default')));
  });
});
