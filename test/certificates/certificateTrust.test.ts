/**
 * The CA and CRL files read at start: what loads, and every problem reported together,
 * each naming its setting and path.
 */
import assert from 'node:assert/strict';
import { sign } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadCertificateTrust } from '../../src/certificates/certificateTrust.js';
import { children, encoded, wholeTlv } from '../../src/certificates/der.js';
import { revocationListsOfFile } from '../../src/certificates/pemCertificates.js';
import { ConfigError } from '../../src/config/configError.js';
import {
  type CertificateFiles,
  makeCertificateFiles,
  pemBundle,
} from '../helpers/certificateFiles.js';

let dir: string;
let files: CertificateFiles;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'portaria-trust-'));
  files = await makeCertificateFiles(dir);
});
after(() => rm(dir, { recursive: true, force: true }));

/** A DER SEQUENCE around `content`. */
function sequence(content: Buffer): Buffer {
  const n = content.length;
  const length = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return Buffer.concat([Buffer.from([0x30, ...length]), content]);
}

/** The root CA's CRL re-signed with another CA's key: its issuer's name, a stranger's signature. */
async function forgedCrl(): Promise<string> {
  const der = revocationListsOfFile(await readFile(files.crl))[0] as Buffer;
  const [tbs, algorithm] = children(der, wholeTlv(der, 0x30));
  const tbsDer = encoded(der, tbs as NonNullable<typeof tbs>);
  const key = await readFile(files.wrongCa.key, 'utf8');
  const signature = sign('sha256', tbsDer, key);
  const bits = Buffer.concat([Buffer.from([0x03, signature.length + 1, 0]), signature]);
  const forged = sequence(
    Buffer.concat([tbsDer, encoded(der, algorithm as NonNullable<typeof algorithm>), bits]),
  );
  const path = join(dir, 'forged.crl');
  await writeFile(path, forged);
  return path;
}

async function problemsOf(load: Promise<unknown>): Promise<readonly string[]> {
  try {
    await load;
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  assert.fail('the trust loaded');
}

describe('certificate trust files', () => {
  test('loads every certificate of a bundle and every CRL', async () => {
    const bundle = join(dir, 'bundle.pem');
    await writeFile(bundle, `# partners\n${pemBundle(files.ca, files.wrongCa)}`);
    const trust = await loadCertificateTrust([bundle], [files.crl, files.intermediateCrl]);
    assert.deepEqual(
      trust.anchors.map((a) => a.x509.subject),
      ['CN=Partners Root CA', 'CN=Someone Else CA'],
    );
    assert.equal(trust.revocationLists.length, 2);
  });

  test('loads DER files too', async () => {
    const der = join(dir, 'ca.der');
    await writeFile(der, files.ca.der);
    const crl = join(dir, 'root.crl.der');
    await writeFile(crl, revocationListsOfFile(await readFile(files.crl))[0] as Buffer);
    const trust = await loadCertificateTrust([der], [crl]);
    assert.equal(trust.anchors.length, 1);
    assert.equal(trust.revocationLists.length, 1);
  });

  test('reports every problem together, in file order, each with its setting and path', async () => {
    const text = join(dir, 'text.pem');
    await writeFile(text, '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n');
    const junk = join(dir, 'junk.pem');
    await writeFile(junk, '-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n');
    const missing = join(dir, 'missing.pem');
    const forged = await forgedCrl();
    const problems = await problemsOf(
      loadCertificateTrust([files.ca.cert, text, junk, missing], [files.ca.cert, forged]),
    );
    assert.deepEqual(problems, [
      `clientCertificate.caFiles[1]: ${text}: there is no CERTIFICATE block in it`,
      `clientCertificate.caFiles[2]: ${junk}: certificate 1 is not an X.509 certificate`,
      `clientCertificate.caFiles[3]: cannot read ${missing} (ENOENT)`,
      `clientCertificate.crlFiles[0]: ${files.ca.cert}: there is no X509 CRL block in it`,
      `clientCertificate.crlFiles[1]: ${forged}: CRL 1's signature does not verify with the CA that issued it`,
    ]);
  });

  test('a problem never quotes the file', async () => {
    const secretish = join(dir, 'secretish.pem');
    await writeFile(
      secretish,
      '-----BEGIN CERTIFICATE-----\nc2VjcmV0LXZhbHVl\n-----END CERTIFICATE-----\n',
    );
    const problems = await problemsOf(loadCertificateTrust([secretish], []));
    assert.equal(problems.length, 1);
    assert.doesNotMatch(problems[0] as string, /c2VjcmV0|secret-value/);
  });

  test('a CRL of an issuer that is no anchor is kept for intermediates', async () => {
    const trust = await loadCertificateTrust([files.ca.cert], [files.intermediateCrl]);
    assert.equal(trust.revocationLists.length, 1);
  });
});
