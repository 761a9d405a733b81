/**
 * Certificates made by the real `openssl` for TLS tests: a test CA (`openssl ca`, so
 * validity dates, revocations and CRLs are OpenSSL's own), certificates it issues for a
 * server or a client, self-signed ones, and the standard set most tests need
 * (`createTestPki`). Everything is written into a directory the test owns; nothing is
 * cached between test files.
 *
 *   const pki = await createTestPki(await tempDir(t, 'pki-'));
 *   // pki.server: 127.0.0.1, ::1 and localhost; pki.client: a client the CA issued;
 *   // pki.expiredClient, pki.notYetValidClient, pki.revokedClient (in pki.crlFile),
 *   // pki.wrongCaClient (pki.otherCa issued it), pki.selfSignedClient
 *   const extra = await pki.ca.issue('partner-2', { use: 'client' });
 *
 * Keys are P-256 unless `keyType: 'rsa'` (2048 bits: the FAPI TLS 1.2 suites are RSA).
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export type KeyType = 'ec' | 'rsa';

export interface IssueOptions {
  /** `server` (serverAuth, SANs from `hosts`) or `client` (clientAuth). */
  readonly use: 'server' | 'client';
  /** Server names and addresses (default 127.0.0.1, ::1, localhost). */
  readonly hosts?: readonly string[];
  /** Validity (default: from an hour ago for 30 days). */
  readonly notBefore?: Date;
  readonly notAfter?: Date;
  readonly keyType?: KeyType;
}

/** A certificate and its key, as files and as PEM text. */
export interface IssuedCertificate {
  readonly name: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** The PEM certificate (one block; a CA's chain is not appended). */
  readonly cert: string;
  readonly key: string;
  /** The DER encoding: what `x5t#S256` hashes. */
  readonly der: Buffer;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

async function openssl(cwd: string, args: readonly string[]): Promise<void> {
  try {
    await run('openssl', args, { cwd });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`openssl ${args[0]} failed: ${stderr.trim()}`);
  }
}

/** `YYYYMMDDHHMMSSZ`, the GeneralizedTime `openssl ca` takes. */
function generalizedTime(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace(/[-T:]/g, '')}Z`;
}

function keyArgs(keyType: KeyType): string[] {
  return keyType === 'rsa'
    ? ['-newkey', 'rsa:2048']
    : ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'];
}

function subjectAltNames(hosts: readonly string[]): string {
  return hosts.map((h) => (/^[\d.]+$|:/.test(h) ? `IP:${h}` : `DNS:${h}`)).join(',');
}

function extensions(options: IssueOptions): string {
  if (options.use === 'client') {
    return 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n';
  }
  const hosts = options.hosts ?? ['127.0.0.1', '::1', 'localhost'];
  return `basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${subjectAltNames(hosts)}\n`;
}

async function issued(dir: string, name: string): Promise<IssuedCertificate> {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  const cert = await readFile(certFile, 'utf8');
  return {
    name,
    certFile,
    keyFile,
    cert,
    key: await readFile(keyFile, 'utf8'),
    der: Buffer.from(new X509Certificate(cert).raw),
  };
}

/** A certificate authority with its own `openssl ca` database in `<dir>/<name>/`. */
export class TestCa {
  readonly name: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** The CA certificate, PEM. */
  readonly pem: string;
  readonly #home: string;
  readonly #dir: string;

  private constructor(dir: string, name: string, pem: string) {
    this.name = name;
    this.#dir = dir;
    this.#home = join(dir, name);
    this.certFile = join(this.#home, 'ca.crt');
    this.keyFile = join(this.#home, 'ca.key');
    this.pem = pem;
  }

  /** A root CA, or with `parent` an intermediate CA that `parent` signed. */
  static async create(dir: string, name: string, parent?: TestCa): Promise<TestCa> {
    const home = join(dir, name);
    await mkdir(join(home, 'newcerts'), { recursive: true });
    await writeFile(join(home, 'index.txt'), '');
    await writeFile(join(home, 'serial'), `${randomSerial()}\n`);
    await writeFile(join(home, 'crlnumber'), '01\n');
    await writeFile(join(home, 'ca.cnf'), caConfig(home));
    await writeFile(
      join(home, 'ca.ext'),
      'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\n',
    );
    const subject = `/CN=${name}`;
    if (parent === undefined) {
      await openssl(home, [
        'req',
        '-x509',
        ...keyArgs('ec'),
        '-nodes',
        '-keyout',
        'ca.key',
        '-out',
        'ca.crt',
        '-subj',
        subject,
        '-days',
        '60',
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign',
      ]);
    } else {
      await openssl(home, [
        'req',
        '-new',
        ...keyArgs('ec'),
        '-nodes',
        '-keyout',
        'ca.key',
        '-out',
        'ca.csr',
        '-subj',
        subject,
      ]);
      await parent.#sign(join(home, 'ca.csr'), join(home, 'ca.crt'), join(home, 'ca.ext'), {
        notBefore: new Date(Date.now() - HOUR_MS),
        notAfter: new Date(Date.now() + 60 * DAY_MS),
      });
    }
    return new TestCa(dir, name, await readFile(join(home, 'ca.crt'), 'utf8'));
  }

  /** A certificate for `name` this CA signs, written as `<dir>/<name>.crt` and `.key`. */
  async issue(name: string, options: IssueOptions): Promise<IssuedCertificate> {
    const dir = this.#dir;
    await openssl(dir, [
      'req',
      '-new',
      ...keyArgs(options.keyType ?? 'ec'),
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=${name}`,
    ]);
    const extFile = join(dir, `${name}.ext`);
    await writeFile(extFile, extensions(options));
    await this.#sign(join(dir, `${name}.csr`), join(dir, `${name}.crt`), extFile, {
      notBefore: options.notBefore ?? new Date(Date.now() - HOUR_MS),
      notAfter: options.notAfter ?? new Date(Date.now() + 30 * DAY_MS),
    });
    return issued(dir, name);
  }

  /** Records `certificate` as revoked in this CA's database (the next `crl()` lists it). */
  async revoke(certificate: IssuedCertificate): Promise<void> {
    await openssl(this.#home, [
      'ca',
      '-batch',
      '-config',
      'ca.cnf',
      '-revoke',
      certificate.certFile,
    ]);
  }

  /**
   * This CA's CRL, PEM, written to `<dir>/<name>.crl.pem` (or `file`) and returned as
   * the path; `nextUpdate` in the past makes a CRL OpenSSL refuses as expired.
   */
  async crl(
    options: { lastUpdate?: Date; nextUpdate?: Date; file?: string } = {},
  ): Promise<string> {
    const file = options.file ?? join(this.#dir, `${this.name}.crl.pem`);
    const lastUpdate = options.lastUpdate ?? new Date(Date.now() - HOUR_MS);
    const nextUpdate = options.nextUpdate ?? new Date(Date.now() + 7 * DAY_MS);
    await openssl(this.#home, [
      'ca',
      '-batch',
      '-config',
      'ca.cnf',
      '-gencrl',
      '-crl_lastupdate',
      generalizedTime(lastUpdate),
      '-crl_nextupdate',
      generalizedTime(nextUpdate),
      '-out',
      file,
    ]);
    return file;
  }

  async #sign(
    csr: string,
    out: string,
    extFile: string,
    validity: { notBefore: Date; notAfter: Date },
  ): Promise<void> {
    await openssl(this.#home, [
      'ca',
      '-batch',
      '-notext',
      '-config',
      'ca.cnf',
      '-in',
      csr,
      '-out',
      out,
      '-extfile',
      extFile,
      '-startdate',
      generalizedTime(validity.notBefore),
      '-enddate',
      generalizedTime(validity.notAfter),
    ]);
  }
}

/** A certificate signed by its own key (no CA issued it), for `use`. */
export async function selfSigned(
  dir: string,
  name: string,
  options: IssueOptions,
): Promise<IssuedCertificate> {
  const extFile = join(dir, `${name}.ext`);
  await writeFile(extFile, extensions(options));
  await openssl(dir, [
    'req',
    '-x509',
    ...keyArgs(options.keyType ?? 'ec'),
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.crt`,
    '-subj',
    `/CN=${name}`,
    '-days',
    '30',
    '-extensions',
    'v3',
    '-config',
    await selfSignedConfig(dir, name, extFile),
  ]);
  return issued(dir, name);
}

async function selfSignedConfig(dir: string, name: string, extFile: string): Promise<string> {
  const file = join(dir, `${name}.cnf`);
  const ext = await readFile(extFile, 'utf8');
  await writeFile(file, `[req]\ndistinguished_name=dn\n[dn]\n[v3]\n${ext}`);
  return file;
}

/** The set of certificates most TLS tests need, all in `dir`. */
export interface TestPki {
  readonly dir: string;
  /** The CA the gateway trusts for client certificates; it also issued `server`. */
  readonly ca: TestCa;
  /** A CA the gateway does not trust. */
  readonly otherCa: TestCa;
  /** For 127.0.0.1, ::1 and localhost (P-256). */
  readonly server: IssuedCertificate;
  readonly client: IssuedCertificate;
  readonly expiredClient: IssuedCertificate;
  readonly notYetValidClient: IssuedCertificate;
  /** Revoked in `crlFile`. */
  readonly revokedClient: IssuedCertificate;
  readonly wrongCaClient: IssuedCertificate;
  readonly selfSignedClient: IssuedCertificate;
  /** The CA's CRL, listing `revokedClient`. */
  readonly crlFile: string;
}

export async function createTestPki(dir: string): Promise<TestPki> {
  const [ca, otherCa] = await Promise.all([
    TestCa.create(dir, 'test-ca'),
    TestCa.create(dir, 'other-ca'),
  ]);
  const now = Date.now();
  const [server, client, expiredClient, notYetValidClient, revokedClient] = await sequence([
    () => ca.issue('server', { use: 'server' }),
    () => ca.issue('client', { use: 'client' }),
    () =>
      ca.issue('expired-client', {
        use: 'client',
        notBefore: new Date(now - 10 * DAY_MS),
        notAfter: new Date(now - DAY_MS),
      }),
    () =>
      ca.issue('not-yet-valid-client', {
        use: 'client',
        notBefore: new Date(now + DAY_MS),
        notAfter: new Date(now + 10 * DAY_MS),
      }),
    () => ca.issue('revoked-client', { use: 'client' }),
  ]);
  await ca.revoke(revokedClient as IssuedCertificate);
  const [crlFile, wrongCaClient, selfSignedClient] = await Promise.all([
    ca.crl(),
    otherCa.issue('wrong-ca-client', { use: 'client' }),
    selfSigned(dir, 'self-signed-client', { use: 'client' }),
  ]);
  return {
    dir,
    ca,
    otherCa,
    server: server as IssuedCertificate,
    client: client as IssuedCertificate,
    expiredClient: expiredClient as IssuedCertificate,
    notYetValidClient: notYetValidClient as IssuedCertificate,
    revokedClient: revokedClient as IssuedCertificate,
    wrongCaClient,
    selfSignedClient,
    crlFile,
  };
}

/** One CA's database takes one `openssl ca` at a time. */
async function sequence<T>(steps: readonly (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = [];
  for (const step of steps) out.push(await step());
  return out;
}

function randomSerial(): string {
  return Array.from({ length: 8 }, () =>
    Math.floor(Math.random() * 256)
      .toString(16)
      .padStart(2, '0'),
  )
    .join('')
    .replace(/^0/, '1');
}

function caConfig(home: string): string {
  return `[ca]
default_ca = own
[own]
dir = ${home}
database = $dir/index.txt
new_certs_dir = $dir/newcerts
certificate = $dir/ca.crt
private_key = $dir/ca.key
serial = $dir/serial
crlnumber = $dir/crlnumber
default_md = sha256
default_days = 30
policy = any
unique_subject = no
copy_extensions = none
[any]
commonName = supplied
`;
}
