/**
 * TLS material made by openssl for the Redis tests: a CA, a server certificate for the
 * name `redis.portaria.test` only (no IP address, so a client must send that name), a
 * client certificate from the same CA, and a second CA that signed none of them.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const SERVER_NAME = 'redis.portaria.test';

export interface TlsFiles {
  readonly caFile: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** A CA that signed nothing here: a client trusting only it must refuse the server. */
  readonly otherCaFile: string;
}

function openssl(dir: string, args: readonly string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function selfSignedCa(dir: string, name: string): void {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.crt`,
    '-subj',
    `/CN=${name}`,
    '-days',
    '2',
  ]);
}

function signed(dir: string, name: string, extensions: string): void {
  openssl(dir, [
    'req',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/CN=${name}`,
  ]);
  writeFileSync(join(dir, `${name}.ext`), `${extensions}\n`);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    `${name}.crt`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  ]);
}

/** Writes the files into `dir` (a test's temporary directory). */
export function makeTlsFiles(dir: string): TlsFiles {
  selfSignedCa(dir, 'ca');
  selfSignedCa(dir, 'other-ca');
  signed(
    dir,
    'server',
    `subjectAltName=DNS:${SERVER_NAME}\nextendedKeyUsage=serverAuth,clientAuth`,
  );
  signed(dir, 'client', 'extendedKeyUsage=clientAuth');
  return {
    caFile: join(dir, 'ca.crt'),
    serverCert: join(dir, 'server.crt'),
    serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.crt'),
    clientKey: join(dir, 'client.key'),
    otherCaFile: join(dir, 'other-ca.crt'),
  };
}
