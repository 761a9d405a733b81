/**
 * `verifiedCertificate`: a verified certificate passes as it is; none, or one with any
 * other verdict, is its refusal — 401, its own code, a reason per verdict, RFC 6749's
 * `invalid_client` for the OAuth endpoints — with openssl-made certificates.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type CertificateVerdict, clientCertificate } from '../../src/domain/clientCertificate.js';
import { verifiedCertificate } from '../../src/domain/verifiedCertificate.js';
import { PortariaError } from '../../src/errors.js';
import { TestCa } from '../helpers/certificates.js';

describe('verifiedCertificate', () => {
  let dir = '';
  let der: Buffer = Buffer.alloc(0);
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'portaria-pki-'));
    const ca = await TestCa.create(dir, 'ca');
    der = (await ca.issue('partner', { use: 'client' })).der;
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('a verified certificate is returned as it is', () => {
    const certificate = clientCertificate(der, 'tls', 'verified');
    assert.equal(verifiedCertificate(certificate), certificate);
  });

  test('no certificate: 401 certificate-required, reason certificate-missing', () => {
    assert.throws(
      () => verifiedCertificate(null),
      (error: unknown) =>
        error instanceof PortariaError &&
        error.code === 'certificate-required' &&
        error.status === 401 &&
        error.reason === 'certificate-missing' &&
        error.oauth === 'invalid_client' &&
        error.detail === 'A client certificate is required (mutual TLS).',
    );
  });

  const cases: readonly [CertificateVerdict, string, RegExp][] = [
    ['expired', 'certificate-expired', /has expired/],
    ['not-yet-valid', 'certificate-not-yet-valid', /not valid yet/],
    ['untrusted', 'certificate-untrusted', /not issued by a trusted authority/],
    ['revoked', 'certificate-revoked', /has been revoked/],
    ['self-signed', 'certificate-self-signed', /self-signed/],
  ];
  for (const [verdict, reason, detail] of cases) {
    test(`${verdict}: 401 certificate-invalid, reason ${reason}`, () => {
      for (const source of ['tls', 'header'] as const) {
        assert.throws(
          () => verifiedCertificate(clientCertificate(der, source, verdict)),
          (error: unknown) =>
            error instanceof PortariaError &&
            error.code === 'certificate-invalid' &&
            error.status === 401 &&
            error.reason === reason &&
            error.oauth === 'invalid_client' &&
            detail.test(error.detail),
        );
      }
    });
  }
});
