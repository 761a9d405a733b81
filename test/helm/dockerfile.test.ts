/**
 * The container image, without a Docker engine: the Dockerfile read and checked (Node 24
 * base, multi-stage, production dependencies only, non-root user, SIGTERM, exec-form
 * entrypoint), and the image's layout rebuilt in a temporary directory the way the
 * Dockerfile builds it — `npm ci --omit=dev` of package.json and package-lock.json, the
 * compiled dist/ — then started with the Dockerfile's own ENTRYPOINT and CMD: it must get
 * ready, serve a token, write nothing outside the data directory and exit 0 on SIGTERM.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { configSchema } from '../../src/config/schema.js';
import { generateSigningKey, writeSigningKey } from '../../src/keys/generateKey.js';
import { type ListeningUrls, listeningUrlsIn, waitForStatus } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import { run } from './helm.js';
import { REPO_ROOT } from './paths.js';

interface Instruction {
  readonly keyword: string;
  readonly args: string;
  readonly stage: number;
}

/** Dockerfile instructions (continuation lines joined, comments dropped), with their stage index. */
export function parseDockerfile(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let stage = -1;
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue; // comment inside a continuation
    pending += pending === '' ? line : ` ${line}`;
    if (pending.endsWith('\\')) {
      pending = pending.slice(0, -1).trimEnd();
      continue;
    }
    const [keyword = '', ...rest] = pending.split(/\s+/);
    const upper = keyword.toUpperCase();
    if (upper === 'FROM') stage++;
    instructions.push({ keyword: upper, args: rest.join(' '), stage });
    pending = '';
  }
  return instructions;
}

const dockerfile = parseDockerfile(await readFile(join(REPO_ROOT, 'Dockerfile'), 'utf8'));
const finalStage = Math.max(...dockerfile.map((i) => i.stage));
const inFinal = (keyword: string) =>
  dockerfile.filter((i) => i.stage === finalStage && i.keyword === keyword);
const one = (keyword: string): Instruction => {
  const found = inFinal(keyword);
  assert.equal(found.length, 1, `one ${keyword} in the final stage`);
  return found[0] as Instruction;
};
const execForm = (instruction: Instruction): string[] => {
  const value = JSON.parse(instruction.args) as unknown;
  assert.ok(Array.isArray(value), `${instruction.keyword} must be in exec form (a JSON array)`);
  return value as string[];
};

describe('Dockerfile', () => {
  test('multi-stage, every stage on Node.js 24, a slim or distroless runtime', () => {
    const froms = dockerfile.filter((i) => i.keyword === 'FROM');
    assert.ok(froms.length >= 2, 'multi-stage');
    for (const from of froms) {
      assert.match(
        from.args,
        /^(node:24[-.\w]*|gcr\.io\/distroless\/nodejs24[-\w]*(:[\w.-]+)?)(\s+AS\s+\w+)?$/i,
        from.args,
      );
    }
    assert.match(one('FROM').args, /^(node:24[-.\w]*-slim|gcr\.io\/distroless\/nodejs24)/);
  });

  test('production dependencies only: npm ci --omit=dev, no dev tree or sources in the runtime', () => {
    const runs = dockerfile.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    assert.ok(
      runs.some((r) => /\bnpm ci\b.*--omit=dev/.test(r)),
      'npm ci --omit=dev',
    );
    const copies = inFinal('COPY').map((c) => c.args);
    assert.ok(
      copies.some((c) => /--from=\w+ \S*node_modules/.test(c)),
      'node_modules from a stage',
    );
    assert.ok(
      copies.some((c) => /--from=\w+ \S*dist/.test(c)),
      'dist from the build stage',
    );
    for (const copy of copies)
      assert.doesNotMatch(copy, /(^|\s)(\.|src\S*)\s/, `runtime copies ${copy}`);
    // The stage that provides node_modules installs with --omit=dev.
    const nodeModules = copies.find((c) => /node_modules/.test(c)) as string;
    const from = /--from=(\w+)/.exec(nodeModules)?.[1];
    const stageIndex = dockerfile.find(
      (i) => i.keyword === 'FROM' && new RegExp(`\\bAS ${from}$`, 'i').test(i.args),
    )?.stage;
    assert.ok(
      dockerfile.some(
        (i) => i.stage === stageIndex && i.keyword === 'RUN' && /npm ci\b.*--omit=dev/.test(i.args),
      ),
      `stage ${from} runs npm ci --omit=dev`,
    );
  });

  test('non-root user, SIGTERM, exec-form entrypoint, ports of the default config', () => {
    const user = one('USER').args;
    assert.doesNotMatch(user, /^(root|0)(:|$)/);
    assert.match(user, /^[1-9]\d*(:[1-9]\d*)?$/, 'a numeric uid, so runAsNonRoot can check it');
    assert.equal(one('STOPSIGNAL').args, 'SIGTERM');
    assert.deepEqual(execForm(one('ENTRYPOINT')), [
      'node',
      '--max-semi-space-size=8',
      'dist/main.js',
    ]);
    assert.deepEqual(execForm(one('CMD')), ['--config', '/etc/portaria/portaria.yaml']);
    const ports = one('EXPOSE').args.split(/\s+/).map(Number);
    const { server, admin, authorizer } = configSchema.properties;
    assert.deepEqual(ports, [
      server.properties.port.default,
      admin.properties.port.default,
      authorizer.properties.port.default,
      authorizer.properties.grpc.properties.port.default,
    ]);
    // The image's user owns /data, the only place the gateway writes.
    assert.ok(inFinal('RUN').some((r) => /chown 10001:10001 \/data/.test(r.args)));
    assert.equal(user.split(':')[0], '10001');
  });

  test('.dockerignore admits exactly what the build copies from the context', async () => {
    const lines = (await readFile(join(REPO_ROOT, '.dockerignore'), 'utf8'))
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    assert.equal(lines[0], '**', 'everything is excluded first');
    const admitted = lines.slice(1).map((l) => {
      assert.ok(l.startsWith('!'), `only exceptions after **: ${l}`);
      return l.slice(1).replace(/\/$/, '');
    });
    const sources = dockerfile
      .filter((i) => i.keyword === 'COPY' && !i.args.includes('--from='))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    assert.deepEqual([...new Set(sources)].sort(), [...admitted].sort());
  });
});

/** Every file under `dir` with its size and modification time. */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const info = await stat(path);
    files.set(relative(dir, path), `${info.isDirectory() ? 'dir' : info.size}:${info.mtimeMs}`);
  }
  return files;
}

describe('the image layout, built like the Dockerfile and started with its entrypoint', () => {
  test('npm ci --omit=dev + dist/: ready, serves a token, writes only to /data, exits 0 on SIGTERM', {
    timeout: 60_000,
  }, async (t) => {
    const root = await mkdtemp(join(tmpdir(), 'portaria-image-'));
    t.after(() => rm(root, { recursive: true, force: true }));
    const app = join(root, 'app'); // WORKDIR /app
    const etc = join(root, 'etc', 'portaria'); // /etc/portaria, mounted read-only
    const data = join(root, 'data'); // /data, the writable volume
    await mkdir(app, { recursive: true });
    await mkdir(etc, { recursive: true });
    await mkdir(data);

    // deps stage: the Dockerfile's own `npm ci --omit=dev …` (from the npm cache when it can).
    for (const file of ['package.json', 'package-lock.json']) {
      await copyFile(join(REPO_ROOT, file), join(app, file));
    }
    const install = dockerfile.find(
      (i) => i.keyword === 'RUN' && /npm ci\b.*--omit=dev/.test(i.args),
    );
    const npmArgs = (install?.args.split('&&')[0] ?? '').trim().split(/\s+/).slice(1);
    const npm = await run('npm', [...npmArgs, '--prefer-offline', '--loglevel=error'], {
      cwd: app,
      timeoutMs: 45_000,
    });
    assert.equal(npm.code, 0, npm.stderr);
    await assert.rejects(
      stat(join(app, 'node_modules', 'typescript')),
      'no dev dependency installed',
    );

    // build stage: `npm run build` is tsc -p tsconfig.build.json.
    const tsc = await run(
      process.execPath,
      [
        join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
        '-p',
        'tsconfig.build.json',
        '--outDir',
        join(app, 'dist'),
      ],
      { cwd: REPO_ROOT, timeoutMs: 45_000 },
    );
    assert.equal(tsc.code, 0, tsc.stdout + tsc.stderr);

    // The mounted configuration: keys, clients, and every written file in /data.
    const secret = 'image-test-secret-0123456789abcdefghij';
    await writeSigningKey(join(etc, 'keys'), await generateSigningKey('ES256', new Date()));
    await writeFile(
      join(etc, 'clients.json'),
      JSON.stringify({
        clients: [
          { id: 'acme', secrets: [{ hash: hashGeneratedSecret(secret) }], scopes: ['orders:read'] },
        ],
      }),
    );
    // Port 0: the gateway picks its ports and its "listening" line says which.
    await writeFile(
      join(etc, 'portaria.yaml'),
      [
        'server: {host: 127.0.0.1, port: 0, shutdownGraceMs: 2000}',
        'admin: {host: 127.0.0.1, port: 0}',
        `keys: {dir: ${join(etc, 'keys')}}`,
        `clients: {file: ${join(etc, 'clients.json')}}`,
        `revocation: {file: ${join(data, 'revocations.log')}, queueFile: ${join(data, 'revocations-pending.log')}}`,
        '',
      ].join('\n'),
    );
    const before = { app: await snapshot(app), etc: await snapshot(etc) };

    // ENTRYPOINT + CMD, with /etc/portaria mapped to the temporary directory.
    const command = [...execForm(one('ENTRYPOINT')), ...execForm(one('CMD'))].map((a) =>
      a.replace(/^\/etc\/portaria/, etc),
    );
    assert.equal(command[0], 'node');
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    for (const e of inFinal('ENV')) {
      const [name, value] = e.args.split('=');
      env[name as string] = value ?? '';
    }
    const child = spawn(process.execPath, command.slice(1), {
      cwd: app,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      output += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      output += c;
    });
    const exited = new Promise<{ code: number | null; signal: string | null }>((done) =>
      child.once('exit', (code, signal) => done({ code, signal })),
    );
    t.after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });

    let urls: ListeningUrls;
    try {
      urls = await waitFor('the "listening" line', () => listeningUrlsIn(output), 15_000, 20);
      await waitForStatus(`${urls.adminUrl}/readyz`, 200, 15_000);
    } catch (error) {
      assert.fail(`not ready: ${(error as Error).message}\n${output}`);
    }
    const res = await fetch(`${urls.publicUrl}/v1/authentication/accesstoken`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: 'acme', clientSecret: secret }),
    });
    assert.equal(res.status, 200);
    await res.arrayBuffer();

    child.kill('SIGTERM');
    assert.deepEqual(await exited, { code: 0, signal: null }, output);
    assert.deepEqual(await snapshot(app), before.app, 'the gateway wrote into /app');
    assert.deepEqual(await snapshot(etc), before.etc, 'the gateway wrote into /etc/portaria');
    assert.ok(
      (await readdir(data)).includes('revocations.log'),
      'the revocation log lives in /data',
    );

    // pino-pretty is a dev dependency: a production install refuses log.pretty at start.
    const pretty = await run(process.execPath, command.slice(1), {
      cwd: app,
      env: { ...env, PORTARIA_LOG_PRETTY: 'true' },
      timeoutMs: 15_000,
    });
    assert.equal(pretty.code, 1, pretty.stdout + pretty.stderr);
    assert.match(pretty.stderr, /log\.pretty needs the development dependency pino-pretty/);
  });
});
