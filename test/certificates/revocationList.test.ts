/**
 * CRLs made by the real openssl (`openssl ca -gencrl`), read by our DER reader: the
 * revoked serials, the dates, the signature against the right and a wrong key, and the
 * CRLs it refuses rather than half-understands.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parseCertificate } from '../../src/certificates/certificateFields.js';
import { DerError } from '../../src/certificates/der.js';
import { revocationListsOfFile } from '../../src/certificates/pemCertificates.js';
import { parseRevocationList, RevocationListError } from '../../src/certificates/revocationList.js';
import { type CertificateFiles, makeCertificateFiles } from '../helpers/certificateFiles.js';

const run = promisify(execFile);
let dir: string;
let files: CertificateFiles;

async function crlDer(path: string): Promise<Buffer> {
  return revocationListsOfFile(await readFile(path))[0] as Buffer;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'portaria-crl-'));
  files = await makeCertificateFiles(dir);
});
after(() => rm(dir, { recursive: true, force: true }));

describe('revocation lists', () => {
  test('lists the revoked serial, in the form X509Certificate.serialNumber has', async () => {
    const list = parseRevocationList(await crlDer(files.crl));
    assert.deepEqual([...list.revoked], [files.revoked.x509.serialNumber]);
    assert.equal(list.revoked.has(files.client.x509.serialNumber), false);
  });

  test('reads thisUpdate and nextUpdate (openssl: 30 days apart)', async () => {
    const list = parseRevocationList(await crlDer(files.crl));
    assert.ok(Math.abs(list.thisUpdate - Date.now()) < 120_000);
    assert.equal(list.nextUpdate, list.thisUpdate + 30 * 86_400_000);
  });

  test('names its issuer as the CA certificate encodes its subject', async () => {
    const list = parseRevocationList(await crlDer(files.crl));
    assert.ok(list.issuerName.equals(parseCertificate(files.ca.der).subjectName));
  });

  test('is signed by its CA’s key, and by no other', async () => {
    const list = parseRevocationList(await crlDer(files.crl));
    assert.equal(list.signedBy(files.ca.x509.publicKey), true);
    assert.equal(list.signedBy(files.wrongCa.x509.publicKey), false);
    assert.equal(list.signedBy(files.intermediate.x509.publicKey), false);
    assert.equal(list.signedBy(new X509Certificate(files.client.pem).publicKey), false);
  });

  test('a CRL whose signed part was changed no longer verifies', async () => {
    const der = Buffer.from(await crlDer(files.crl));
    // Flip a bit of the revoked serial's INTEGER (it sits in the signed part).
    const serial = Buffer.from(files.revoked.x509.serialNumber, 'hex');
    const integer = Buffer.concat([Buffer.from([0x02, serial.length]), serial]);
    const last = der.indexOf(integer) + integer.length - 1;
    assert.ok(last > integer.length);
    der.writeUInt8(der.readUInt8(last) ^ 1, last);
    assert.equal(parseRevocationList(der).signedBy(files.ca.x509.publicKey), false);
  });

  test('refuses a CRL with a critical extension it cannot process (RFC 5280 §5.2)', async () => {
    const config = join(files.dir, 'root', 'openssl.cnf');
    const text = await readFile(config, 'utf8');
    const withIdp = join(files.dir, 'root', 'idp.cnf');
    await writeFile(
      withIdp,
      `${text}[ idp_crl ]\nissuingDistributionPoint = critical, @idp\n[ idp ]\nfullname = URI:http://crl.example/root.crl\n`,
    );
    const out = join(files.dir, 'root', 'idp.crl');
    await run('openssl', ['ca', '-config', withIdp, '-gencrl', '-crlexts', 'idp_crl', '-out', out]);
    const der = revocationListsOfFile(await readFile(out))[0] as Buffer;
    assert.throws(() => parseRevocationList(der), /critical extension \(2\.5\.29\.28\)/);
  });

  const broken: ReadonlyArray<readonly [string, (der: Buffer) => Buffer]> = [
    ['truncated', (der) => der.subarray(0, der.length - 10)],
    ['with a byte after it', (der) => Buffer.concat([der, Buffer.from([0])])],
    ['a certificate instead', () => files.client.der],
    ['an empty SEQUENCE', () => Buffer.from([0x30, 0x00])],
    [
      'a length in long form where short would do',
      (der) => Buffer.concat([Buffer.from([0x30, 0x81, 0x05]), der.subarray(2, 7)]),
    ],
  ];
  for (const [name, change] of broken) {
    test(`refuses a CRL ${name}`, async () => {
      const der = change(await crlDer(files.crl));
      assert.throws(
        () => parseRevocationList(der),
        (error: unknown) => error instanceof DerError || error instanceof RevocationListError,
      );
    });
  }
});
