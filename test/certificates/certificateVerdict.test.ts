/**
 * The gateway's own checks of a forwarded certificate, over openssl-made certificates:
 * the path to the anchors through forwarded intermediates, CRLs, and the dates as the
 * injected moment moves.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type ParsedCertificate,
  parseCertificate,
} from '../../src/certificates/certificateFields.js';
import {
  type CertificateTrust,
  loadCertificateTrust,
  NO_CERTIFICATE_TRUST,
} from '../../src/certificates/certificateTrust.js';
import { verdictAt, verdictSchedule } from '../../src/certificates/certificateVerdict.js';
import type { CertificateVerdict } from '../../src/domain/clientCertificate.js';
import {
  type CertificateFile,
  type CertificateFiles,
  makeCertificateFiles,
} from '../helpers/certificateFiles.js';

let dir: string;
let files: CertificateFiles;
let anchors: CertificateTrust;
let withCrls: CertificateTrust;
let rootCrlOnly: CertificateTrust;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'portaria-verdict-'));
  files = await makeCertificateFiles(dir);
  anchors = await loadCertificateTrust([files.ca.cert], []);
  withCrls = await loadCertificateTrust([files.ca.cert], [files.crl, files.intermediateCrl]);
  rootCrlOnly = await loadCertificateTrust([files.ca.cert], [files.crl]);
});
after(() => rm(dir, { recursive: true, force: true }));

const parsed = (file: CertificateFile): ParsedCertificate => parseCertificate(file.der);

function verdictNow(
  trust: () => CertificateTrust,
  leaf: (f: CertificateFiles) => CertificateFile,
  chain: (f: CertificateFiles) => CertificateFile[] = () => [],
): CertificateVerdict {
  const schedule = verdictSchedule(parsed(leaf(files)), chain(files).map(parsed), trust());
  return verdictAt(schedule, Date.now());
}

type Case = readonly [
  string,
  () => CertificateTrust,
  (f: CertificateFiles) => CertificateFile,
  (f: CertificateFiles) => CertificateFile[],
  CertificateVerdict,
];

const none = () => [];
const cases: readonly Case[] = [
  ['a certificate the anchor issued', () => anchors, (f) => f.client, none, 'verified'],
  [
    'one issued through a forwarded intermediate',
    () => anchors,
    (f) => f.chainedClient,
    (f) => [f.intermediate],
    'verified',
  ],
  [
    'one issued through an intermediate not forwarded',
    () => anchors,
    (f) => f.chainedClient,
    none,
    'untrusted',
  ],
  [
    'one forwarded with a leaf as its "intermediate"',
    () => anchors,
    (f) => f.chainedClient,
    (f) => [f.client],
    'untrusted',
  ],
  ['one from another CA', () => anchors, (f) => f.wrongCaClient, none, 'untrusted'],
  [
    'one from another CA, with that CA forwarded as intermediate',
    () => anchors,
    (f) => f.wrongCaClient,
    (f) => [f.wrongCa],
    'untrusted',
  ],
  ['a self-signed certificate', () => anchors, (f) => f.selfSigned, none, 'self-signed'],
  ['the anchor itself', () => anchors, (f) => f.ca, none, 'verified'],
  ['an expired certificate', () => anchors, (f) => f.expired, none, 'expired'],
  ['a certificate not yet valid', () => anchors, (f) => f.notYetValid, none, 'not-yet-valid'],
  ['a revoked certificate, with the CRL', () => withCrls, (f) => f.revoked, none, 'revoked'],
  ['a revoked certificate, without CRLs', () => anchors, (f) => f.revoked, none, 'verified'],
  ['a valid certificate, with the CRL', () => withCrls, (f) => f.client, none, 'verified'],
  [
    'a chained certificate, with both CAs’ CRLs',
    () => withCrls,
    (f) => f.chainedClient,
    (f) => [f.intermediate],
    'verified',
  ],
  [
    'a chained certificate, without its issuer’s CRL',
    () => rootCrlOnly,
    (f) => f.chainedClient,
    (f) => [f.intermediate],
    'untrusted',
  ],
  [
    'an untrusted certificate, with CRLs',
    () => withCrls,
    (f) => f.wrongCaClient,
    none,
    'untrusted',
  ],
  [
    'without anchors: any CA’s certificate (the proxy verified it)',
    () => NO_CERTIFICATE_TRUST,
    (f) => f.wrongCaClient,
    none,
    'verified',
  ],
  [
    'without anchors: a self-signed one',
    () => NO_CERTIFICATE_TRUST,
    (f) => f.selfSigned,
    none,
    'self-signed',
  ],
  [
    'without anchors: an expired one',
    () => NO_CERTIFICATE_TRUST,
    (f) => f.expired,
    none,
    'expired',
  ],
];

describe('certificate verdicts', () => {
  for (const [name, trust, leaf, chain, verdict] of cases) {
    test(`${name}: ${verdict}`, () => assert.equal(verdictNow(trust, leaf, chain), verdict));
  }

  test('the verdict follows the moment: before, within and after the validity', () => {
    const leaf = parsed(files.expired);
    const schedule = verdictSchedule(leaf, [], NO_CERTIFICATE_TRUST);
    assert.equal(verdictAt(schedule, leaf.notBefore - 1000), 'not-yet-valid');
    assert.equal(verdictAt(schedule, leaf.notBefore), 'verified');
    assert.equal(verdictAt(schedule, leaf.notAfter), 'verified');
    assert.equal(verdictAt(schedule, leaf.notAfter + 1000), 'expired');
  });

  test('a path is valid only while every certificate of it is, the anchor too', () => {
    const leaf = parsed(files.chainedClient);
    const intermediate = parsed(files.intermediate);
    const root = parsed(files.ca);
    const schedule = verdictSchedule(leaf, [intermediate], anchors);
    // The root was made just now, after the others' start: the path starts with it.
    assert.equal(schedule.validFrom, root.notBefore);
    assert.ok(root.notBefore > leaf.notBefore);
    assert.equal(verdictAt(schedule, leaf.notBefore), 'not-yet-valid');
    assert.equal(schedule.validUntil, Math.min(leaf.notAfter, intermediate.notAfter));
  });

  test('past the CRL’s nextUpdate the revocation status is unknown: untrusted', () => {
    const schedule = verdictSchedule(parsed(files.client), [], withCrls);
    assert.equal(verdictAt(schedule, Date.now()), 'verified');
    assert.equal(verdictAt(schedule, schedule.crlUntil + 1000), 'untrusted');
    assert.equal(verdictAt(schedule, schedule.crlFrom - 1000), 'untrusted');
  });

  test('a revoked certificate stays revoked whatever the moment', () => {
    const schedule = verdictSchedule(parsed(files.revoked), [], withCrls);
    assert.equal(verdictAt(schedule, 0), 'revoked');
    assert.equal(verdictAt(schedule, Number.MAX_SAFE_INTEGER), 'revoked');
  });
});
