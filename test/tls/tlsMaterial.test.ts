/**
 * `loadTlsMaterial`: the public listener's TLS files read and checked together, every
 * problem at once with its setting, over openssl-made files; what reloads watch; the
 * trust digest resumption keys follow.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import type { ClientCertificateConfig, ServerTlsConfig } from '../../src/config/types.js';
import {
  loadTlsMaterial,
  type TlsSettings,
  tlsFilePaths,
  validityProblem,
} from '../../src/tls/tlsMaterial.js';
import { createTestPki, type TestPki } from '../helpers/certificates.js';

function settings(
  pki: TestPki,
  tls: Partial<ServerTlsConfig> = {},
  clientCertificate: Partial<ClientCertificateConfig> = {},
): TlsSettings {
  return {
    tls: {
      enabled: true,
      certFile: pki.server.certFile,
      keyFile: pki.server.keyFile,
      minVersion: 'TLSv1.2',
      policy: 'default',
      clientCertificates: 'require',
      ...tls,
    },
    clientCertificate: {
      source: 'tls',
      caFiles: [pki.ca.certFile],
      crlFiles: [pki.crlFile],
      ...clientCertificate,
    },
  };
}

async function problemsOf(run: () => Promise<unknown>): Promise<readonly string[]> {
  try {
    await run();
  } catch (error) {
    assert.ok(error instanceof ConfigError, `not a ConfigError: ${String(error)}`);
    return error.problems;
  }
  return assert.fail('no ConfigError was thrown');
}

describe('loadTlsMaterial', () => {
  let pki: TestPki;
  let dir = '';
  let junk = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'portaria-pki-'));
    pki = await createTestPki(dir);
    junk = join(dir, 'junk.txt');
    await writeFile(junk, 'not a PEM file\n');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('a certificate with its key, CAs and CRLs load', async () => {
    const material = await loadTlsMaterial(settings(pki));
    assert.equal(material.cert, pki.server.cert);
    assert.equal(material.key, pki.server.key);
    assert.deepEqual(material.ca, [pki.ca.pem]);
    assert.equal(material.crl.length, 1);
    assert.equal(validityProblem(material, Date.now()), null);
    assert.match(validityProblem(material, Date.now() + 365 * 86_400_000) ?? '', /expired at/);
  });

  test('every problem of every file is listed at once, each with its setting', async () => {
    const problems = await problemsOf(() =>
      loadTlsMaterial(
        settings(
          pki,
          { certFile: join(dir, 'missing.crt'), keyFile: junk },
          { caFiles: [junk, join(dir, 'missing-ca.crt')], crlFiles: [pki.ca.certFile] },
        ),
      ),
    );
    assert.deepEqual(problems, [
      `server.tls.certFile: cannot read ${join(dir, 'missing.crt')} (ENOENT)`,
      'server.tls.keyFile: holds no unencrypted PEM private key',
      'clientCertificate.caFiles[0]: holds no PEM certificate ("BEGIN CERTIFICATE")',
      `clientCertificate.caFiles[1]: cannot read ${join(dir, 'missing-ca.crt')} (ENOENT)`,
      'clientCertificate.crlFiles[0]: holds no PEM CRL ("BEGIN X509 CRL")',
    ]);
  });

  test('a key that is not the certificate’s is refused', async () => {
    assert.deepEqual(
      await problemsOf(() => loadTlsMaterial(settings(pki, { keyFile: pki.client.keyFile }))),
      [
        'server.tls.keyFile: is not the key of the certificate in server.tls.certFile (the first one)',
      ],
    );
  });

  test('the fapi policy with TLS 1.2 refuses a key that is not RSA, and takes it with TLS 1.3 only', async () => {
    const [problem] = await problemsOf(() => loadTlsMaterial(settings(pki, { policy: 'fapi' })));
    assert.match(
      problem ?? '',
      /^server\.tls\.keyFile: policy "fapi" permits TLS 1\.2 only with RSA suites .* this key is ec/,
    );
    await loadTlsMaterial(settings(pki, { policy: 'fapi', minVersion: 'TLSv1.3' }));
    const rsa = await pki.ca.issue('rsa-material', { use: 'server', keyType: 'rsa' });
    await loadTlsMaterial(
      settings(pki, { policy: 'fapi', certFile: rsa.certFile, keyFile: rsa.keyFile }),
    );
  });

  test('a CRL OpenSSL cannot parse is refused by OpenSSL, named as such', async () => {
    const broken = join(dir, 'broken.crl.pem');
    await writeFile(broken, '-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n');
    const [problem] = await problemsOf(() =>
      loadTlsMaterial(settings(pki, {}, { crlFiles: [broken] })),
    );
    assert.match(problem ?? '', /^server\.tls: OpenSSL refused the files: /);
  });

  test('with clientCertificates off the CA and CRL files are neither read nor watched', async () => {
    const off = settings(pki, { clientCertificates: 'off' }, { caFiles: [junk], crlFiles: [junk] });
    const material = await loadTlsMaterial(off);
    assert.deepEqual(material.ca, []);
    assert.deepEqual(tlsFilePaths(off), [pki.server.certFile, pki.server.keyFile]);
    assert.deepEqual(tlsFilePaths(settings(pki)), [
      pki.server.certFile,
      pki.server.keyFile,
      pki.ca.certFile,
      pki.crlFile,
    ]);
  });

  test('the trust digest follows the CAs and CRLs, not the server certificate', async () => {
    const base = await loadTlsMaterial(settings(pki));
    const otherServer = await pki.ca.issue('server-2', { use: 'server' });
    const renewed = await loadTlsMaterial(
      settings(pki, { certFile: otherServer.certFile, keyFile: otherServer.keyFile }),
    );
    assert.deepEqual(renewed.trustDigest, base.trustDigest);
    const newCrl = await pki.ca.crl({ file: join(dir, 'newer.crl.pem') });
    const revoked = await loadTlsMaterial(settings(pki, {}, { crlFiles: [newCrl] }));
    assert.notDeepEqual(revoked.trustDigest, base.trustDigest);
    const moreCas = await loadTlsMaterial(
      settings(pki, {}, { caFiles: [pki.ca.certFile, pki.otherCa.certFile] }),
    );
    assert.notDeepEqual(moreCas.trustDigest, base.trustDigest);
  });
});
