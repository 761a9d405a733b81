#!/usr/bin/env node
/**
 * What the test suite needs from the machine besides Node and npm, checked before it
 * builds (`npm test` runs this first, and so does .ci/run): the real programs the tests
 * drive, looked up on PATH. Tests never skip for want of one, so a missing program would
 * fail dozens of tests; this stops the run at once instead.
 *
 * Missing programs are installed when that can be done without asking: as root on a
 * Debian-like system (apt-get), which is how a fresh machine and CI run. The services
 * the packages start are stopped and disabled (the tests start their own servers on free
 * ports). Otherwise it prints one line naming the programs, their Debian packages and the
 * command that installs them, and exits 1.
 *
 *   node scripts/test-prerequisites.mjs    # silent and exit 0 when all is there
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Each program, the variable that may name another binary for it, and its Debian package. */
const NEEDS = [
  // The Redis revocation store and the shared token limits run against a real server.
  { program: 'redis-server', variable: 'REDIS_SERVER', pkg: 'redis-server', service: true },
  // /metrics output and the chart's alert rules are checked and unit-tested by promtool.
  { program: 'promtool', variable: 'PROMTOOL', pkg: 'prometheus', service: true },
  // The chart's `helm test` hook script runs as it does in its pod (sh + curl).
  { program: 'curl', pkg: 'curl', service: false },
  // README "Running it for real" makes its secrets with openssl; a test runs those steps.
  { program: 'openssl', pkg: 'openssl', service: false },
  // scripts/fetch-helm.sh unpacks the pinned helm binary from a zip file.
  { program: 'unzip', pkg: 'unzip', service: false },
  // The certificate-header tests run a real nginx terminating mutual TLS in front.
  { program: 'nginx', variable: 'NGINX', pkg: 'nginx', service: true },
];

const SELF = 'test-prerequisites';

function isExecutableFile(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Whether `command` (a name looked up on PATH, or a path) names an executable file. */
function found(command) {
  if (command.includes('/')) return isExecutableFile(command);
  return (process.env.PATH ?? '')
    .split(delimiter)
    .some((dir) => dir !== '' && isExecutableFile(join(dir, command)));
}

/** The command the tests will run for `need`: the variable's value when set. */
const commandOf = (need) => (need.variable && process.env[need.variable]) || need.program;

function stop(message) {
  process.stderr.write(`${SELF}: ${message}\n`);
  process.exit(1);
}

const missing = NEEDS.filter((need) => !found(commandOf(need)));
if (missing.length === 0) process.exit(0);

// A binary named by its variable is the user's choice: installing the package would not
// put it there.
const named = missing.filter((need) => commandOf(need) !== need.program);
if (named.length > 0) {
  stop(
    `${named.map((need) => `${need.variable}=${commandOf(need)}`).join(', ')}: not an executable file`,
  );
}

const root = process.getuid?.() === 0;
const packages = missing.map((need) => need.pkg);
const install = ['install', '-y', '--no-install-recommends', ...packages];
if (!root || !found('apt-get')) {
  const programs = missing.map((need) => need.program).join(', ');
  stop(
    `npm test needs ${programs}, not found on PATH; install the Debian/Ubuntu packages with: ${root ? '' : 'sudo '}apt-get ${install.join(' ')}`,
  );
}

process.stderr.write(`${SELF}: installing ${packages.join(' ')} with apt-get\n`);
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
for (const args of [
  ['update', '-qq'],
  ['-qq', ...install],
]) {
  const result = spawnSync('apt-get', args, { env, stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0) {
    stop(`apt-get ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`})`);
  }
}
// The packages start their own servers (Prometheus listens on every interface); the
// tests do not use them.
const services = missing.filter((need) => need.service).map((need) => need.pkg);
if (services.length > 0) {
  const quiet = { env, stdio: 'ignore' };
  if (found('systemctl')) spawnSync('systemctl', ['disable', '--now', ...services], quiet);
  if (found('service')) for (const name of services) spawnSync('service', [name, 'stop'], quiet);
}
const still = missing.filter((need) => !found(commandOf(need)));
if (still.length > 0) {
  stop(
    `${still.map((need) => need.program).join(', ')} still not found on PATH after apt-get install`,
  );
}
