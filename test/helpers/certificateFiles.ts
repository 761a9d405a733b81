/**
 * Client certificates made by the real openssl for the certificate tests: a partners' CA
 * with an intermediate CA, the certificates either issued (valid, expired, not yet valid,
 * revoked, through the intermediate), one from another CA, a self-signed one, a CRL
 * listing the revoked one, and a server certificate for a TLS terminator on 127.0.0.1.
 * Keys are P-256 (quick to make). Everything is written under `dir`; nothing is cached
 * between test files.
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface CertificateFile {
  /** The PEM certificate's path. */
  readonly cert: string;
  /** Its private key's path (PEM). */
  readonly key: string;
  readonly pem: string;
  readonly der: Buffer;
  readonly x509: X509Certificate;
}

export interface CertificateFiles {
  readonly dir: string;
  /** The partners' root CA. */
  readonly ca: CertificateFile;
  /** An intermediate CA the root issued. */
  readonly intermediate: CertificateFile;
  /** Issued by the root CA, valid now (30 days). */
  readonly client: CertificateFile;
  /** A second valid one (another partner). */
  readonly otherClient: CertificateFile;
  /** Issued by the intermediate, valid now. */
  readonly chainedClient: CertificateFile;
  /** Issued by the root CA, ended yesterday. */
  readonly expired: CertificateFile;
  /** Issued by the root CA, valid from tomorrow. */
  readonly notYetValid: CertificateFile;
  /** Issued by the root CA and revoked on `crl`. */
  readonly revoked: CertificateFile;
  /** Issued by another CA (`wrongCa`). */
  readonly wrongCa: CertificateFile;
  readonly wrongCaClient: CertificateFile;
  /** Signed by its own key. */
  readonly selfSigned: CertificateFile;
  /** For a TLS server on 127.0.0.1 / localhost, issued by the root CA. */
  readonly server: CertificateFile;
  /** The root CA's CRL (PEM), revoking `revoked`; valid 30 days. */
  readonly crl: string;
  /** The intermediate's CRL (PEM), revoking nothing. */
  readonly intermediateCrl: string;
}

const DAY = 86_400_000;

/** `YYYYMMDDHHMMSSZ` for `openssl ca -startdate/-enddate`. */
function asn1Time(ms: number): string {
  return `${new Date(ms).toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
}

function caConfig(dir: string): string {
  return `[ ca ]
default_ca = ca_section
[ ca_section ]
dir = ${dir}
database = ${dir}/index.txt
new_certs_dir = ${dir}/issued
serial = ${dir}/serial
crlnumber = ${dir}/crlnumber
default_md = sha256
default_days = 30
default_crl_days = 30
policy = policy_any
unique_subject = no
copy_extensions = none
[ policy_any ]
commonName = supplied
[ req ]
distinguished_name = dn
prompt = no
[ dn ]
CN = unused
[ root ]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[ intermediate ]
basicConstraints = critical,CA:TRUE,pathlen:0
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[ leaf ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
[ selfsigned ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
[ server ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
authorityKeyIdentifier = keyid
`;
}

async function openssl(args: string[]): Promise<void> {
  await run('openssl', args);
}

async function fileOf(cert: string, key: string): Promise<CertificateFile> {
  const pem = await readFile(cert, 'utf8');
  const x509 = new X509Certificate(pem);
  return { cert, key, pem, der: x509.raw, x509 };
}

/** A CA directory `openssl ca` works in. */
async function caDirectory(dir: string, serial: string): Promise<string> {
  await mkdir(join(dir, 'issued'), { recursive: true });
  await writeFile(join(dir, 'index.txt'), '');
  await writeFile(join(dir, 'serial'), `${serial}\n`);
  await writeFile(join(dir, 'crlnumber'), '01\n');
  const config = join(dir, 'openssl.cnf');
  await writeFile(config, caConfig(dir));
  return config;
}

/** A file name for a common name (no spaces: nginx and shells take paths as words). */
function fileName(commonName: string): string {
  return commonName.toLowerCase().replace(/[^a-z0-9]+/g, '-');
}

const P256 = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

/** A self-signed certificate (a root CA with `extensions: root`). */
async function selfSigned(
  dir: string,
  config: string,
  name: string,
  extensions: string,
): Promise<CertificateFile> {
  const cert = join(dir, `${fileName(name)}.crt`);
  const key = join(dir, `${fileName(name)}.key`);
  await openssl([
    'req',
    '-x509',
    '-config',
    config,
    '-extensions',
    extensions,
    ...P256,
    '-keyout',
    key,
    '-out',
    cert,
    '-subj',
    `/CN=${name}`,
    '-days',
    '3650',
  ]);
  return fileOf(cert, key);
}

/** A certificate `openssl ca` issues with `config` (its CA), between `start` and `end`. */
async function issued(
  dir: string,
  config: string,
  name: string,
  extensions: string,
  start: number,
  end: number,
): Promise<CertificateFile> {
  const cert = join(dir, `${fileName(name)}.crt`);
  const key = join(dir, `${fileName(name)}.key`);
  const csr = join(dir, `${fileName(name)}.csr`);
  await openssl(['req', '-new', '-config', config, ...P256, '-keyout', key, '-out', csr]);
  await openssl([
    'ca',
    '-batch',
    '-notext',
    '-config',
    config,
    '-extensions',
    extensions,
    '-subj',
    `/CN=${name}`,
    '-startdate',
    asn1Time(start),
    '-enddate',
    asn1Time(end),
    '-in',
    csr,
    '-out',
    cert,
  ]);
  return fileOf(cert, key);
}

/** Makes the whole set under `dir` (about a second of openssl). */
export async function makeCertificateFiles(dir: string): Promise<CertificateFiles> {
  const now = Date.now();
  const rootDir = join(dir, 'root');
  const interDir = join(dir, 'intermediate');
  const wrongDir = join(dir, 'wrong');
  const selfDir = join(dir, 'self');
  const [rootConfig, interConfig, wrongConfig, selfConfig] = await Promise.all([
    caDirectory(rootDir, '1000'),
    caDirectory(interDir, '2000'),
    caDirectory(wrongDir, '3000'),
    caDirectory(selfDir, '4000'),
  ]);
  const ca = await selfSigned(rootDir, rootConfig, 'Partners Root CA', 'root');
  await writeRootPaths(rootConfig, ca);
  const wrongCa = await selfSigned(wrongDir, wrongConfig, 'Someone Else CA', 'root');
  await writeRootPaths(wrongConfig, wrongCa);
  const valid = [now - DAY, now + 30 * DAY] as const;
  const intermediate = await issued(
    rootDir,
    rootConfig,
    'Partners Issuing CA',
    'intermediate',
    ...valid,
  );
  await writeRootPaths(interConfig, intermediate);
  const client = await issued(rootDir, rootConfig, 'partner-acme', 'leaf', ...valid);
  const otherClient = await issued(rootDir, rootConfig, 'partner-globex', 'leaf', ...valid);
  const expired = await issued(
    rootDir,
    rootConfig,
    'partner-expired',
    'leaf',
    now - 10 * DAY,
    now - DAY,
  );
  const notYetValid = await issued(
    rootDir,
    rootConfig,
    'partner-early',
    'leaf',
    now + DAY,
    now + 10 * DAY,
  );
  const revoked = await issued(rootDir, rootConfig, 'partner-revoked', 'leaf', ...valid);
  const server = await issued(rootDir, rootConfig, 'localhost', 'server', ...valid);
  const chainedClient = await issued(interDir, interConfig, 'partner-chained', 'leaf', ...valid);
  const wrongCaClient = await issued(wrongDir, wrongConfig, 'partner-elsewhere', 'leaf', ...valid);
  const self = await selfSigned(selfDir, selfConfig, 'partner-self', 'selfsigned');
  await openssl(['ca', '-config', rootConfig, '-revoke', revoked.cert]);
  const crl = join(rootDir, 'root.crl');
  await openssl(['ca', '-config', rootConfig, '-gencrl', '-out', crl]);
  const intermediateCrl = join(interDir, 'intermediate.crl');
  await openssl(['ca', '-config', interConfig, '-gencrl', '-out', intermediateCrl]);
  return {
    dir,
    ca,
    intermediate,
    client,
    otherClient,
    chainedClient,
    expired,
    notYetValid,
    revoked,
    wrongCa,
    wrongCaClient,
    selfSigned: self,
    server,
    crl,
    intermediateCrl,
  };
}

/** Points a CA directory's config at the CA's certificate and key. */
async function writeRootPaths(config: string, ca: CertificateFile): Promise<void> {
  const text = await readFile(config, 'utf8');
  await writeFile(
    config,
    text.replace(
      'default_md = sha256',
      `default_md = sha256\ncertificate = ${ca.cert}\nprivate_key = ${ca.key}`,
    ),
  );
}

/** A PEM bundle of `files`' certificates (a CA file, a chain). */
export function pemBundle(...files: readonly CertificateFile[]): string {
  return files.map((f) => f.pem).join('');
}
