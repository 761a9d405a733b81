/**
 * The header reader: each format to a `ClientCertificate`, the cache by value (bounded,
 * least recently used out, never stale as the clock moves), and its refusals: 400
 * problem details naming the header, never quoting it, never cached.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  CertificateHeaderReader,
  type CertificateHeaderReaderOptions,
  MAX_HEADER_BYTES,
} from '../../src/certificates/certificateHeaderReader.js';
import {
  type CertificateTrust,
  loadCertificateTrust,
} from '../../src/certificates/certificateTrust.js';
import { isPortariaError } from '../../src/errors.js';
import { ManualClock } from '../../src/lib/clock.js';
import { type CertificateFiles, makeCertificateFiles } from '../helpers/certificateFiles.js';
import { byteSequence, escapedPem, sha256Hex } from './formatFixtures.js';

let dir: string;
let files: CertificateFiles;
let trust: CertificateTrust;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'portaria-reader-'));
  files = await makeCertificateFiles(dir);
  trust = await loadCertificateTrust([files.ca.cert], [files.crl, files.intermediateCrl]);
});
after(() => rm(dir, { recursive: true, force: true }));

function reader(options: Partial<CertificateHeaderReaderOptions> = {}) {
  return new CertificateHeaderReader({
    format: 'nginx',
    name: 'x-ssl-client-cert',
    trust,
    clock: new ManualClock(Date.now()),
    ...options,
  });
}

/** The 400 a read throws: its detail and private reason. */
function refusalOf(read: () => unknown): { detail: string; reason: string; status: number } {
  try {
    read();
  } catch (error) {
    assert.ok(isPortariaError(error), String(error));
    return { detail: error.detail, reason: error.reason, status: error.status };
  }
  assert.fail('the value was read');
}

describe('the certificate header reader', () => {
  test('reads each format into the same certificate, from the header', () => {
    const der = files.chainedClient.der;
    const xfcc = `Hash=${sha256Hex(der)};Cert="${encodeURIComponent(files.chainedClient.pem)}";Chain="${encodeURIComponent(files.chainedClient.pem + files.intermediate.pem)}"`;
    const read = [
      reader({ format: 'rfc9440', name: 'client-cert' }).read(
        byteSequence(der),
        byteSequence(files.intermediate.der),
      ),
      reader({ format: 'xfcc', name: 'x-forwarded-client-cert' }).read(xfcc),
    ];
    for (const certificate of read) {
      assert.equal(certificate.source, 'header');
      assert.deepEqual(certificate.der, der);
      assert.equal(certificate.thumbprint, createHash('sha256').update(der).digest('base64url'));
      assert.equal(certificate.x509.subject, 'CN=partner-chained');
      assert.equal(certificate.verdict, 'verified');
    }
  });

  test('a value seen before is not parsed again: the same certificate comes back', () => {
    const r = reader();
    const value = escapedPem(files.client.der);
    const first = r.read(value);
    assert.equal(r.read(`${value}`), first);
    assert.equal(r.size, 1);
  });

  test('a cached certificate expires when the clock passes its end', () => {
    const clock = new ManualClock(Date.now());
    const r = reader({ clock });
    const value = escapedPem(files.client.der);
    assert.equal(r.read(value).verdict, 'verified');
    clock.set(new Date(files.client.x509.validTo).getTime() + 1000);
    const later = r.read(value);
    // Past the CRL's nextUpdate too (30 days), which OpenSSL's order checks first.
    assert.notEqual(later.verdict, 'verified');
    assert.equal(r.size, 1);
  });

  test('holds at most cacheSize values, the least recently used going first', () => {
    const r = reader({ cacheSize: 2 });
    const [a, b, c] = [files.client, files.otherClient, files.expired].map((f) =>
      escapedPem(f.der),
    );
    const first = r.read(a as string);
    const second = r.read(b as string);
    r.read(a as string);
    r.read(c as string);
    assert.equal(r.size, 2);
    assert.equal(r.read(a as string), first, 'a was used after b: kept');
    assert.notEqual(r.read(b as string), second, 'b was the least recently used: parsed again');
  });

  test('a value over the bound is refused before it is parsed', () => {
    const r = reader();
    const refusal = refusalOf(() => r.read('%41'.repeat(MAX_HEADER_BYTES / 3 + 1)));
    assert.deepEqual(refusal, {
      status: 400,
      reason: 'certificate-header-too-large',
      detail: `The x-ssl-client-cert header is longer than ${MAX_HEADER_BYTES} bytes.`,
    });
  });

  const malformed: ReadonlyArray<
    readonly [
      string,
      CertificateHeaderReaderOptions['format'],
      () => [string | undefined, string?],
      string,
    ]
  > = [
    ['garbage base64', 'rfc9440', () => [':not*base64:'], 'client-cert'],
    ['bytes that are not a certificate', 'rfc9440', () => [':aGVsbG8gd29ybGQ=:'], 'client-cert'],
    [
      'a certificate with a byte after it',
      'rfc9440',
      () => [byteSequence(Buffer.concat([files.client.der, Buffer.from([0])]))],
      'client-cert',
    ],
    [
      'an intermediate that is not a certificate',
      'rfc9440',
      () => [byteSequence(files.client.der), ':aGVsbG8=:'],
      'client-cert-chain',
    ],
    [
      'nine intermediates',
      'rfc9440',
      () => [
        byteSequence(files.client.der),
        Array(9).fill(byteSequence(files.intermediate.der)).join(', '),
      ],
      'client-cert-chain',
    ],
    [
      'two certificates where one is allowed',
      'nginx',
      () => [encodeURIComponent(files.client.pem + files.otherClient.pem)],
      'x-ssl-client-cert',
    ],
    [
      'PEM with trailing junk',
      'nginx',
      () => [encodeURIComponent(`${files.client.pem}junk`)],
      'x-ssl-client-cert',
    ],
    [
      'an XFCC element with only a Hash',
      'xfcc',
      () => [`Hash=${sha256Hex(files.client.der)}`],
      'x-forwarded-client-cert',
    ],
  ];
  for (const [name, format, value, header] of malformed) {
    test(`refuses ${name}, naming ${header}, and caches nothing`, () => {
      const names = {
        rfc9440: 'client-cert',
        xfcc: 'x-forwarded-client-cert',
        nginx: 'x-ssl-client-cert',
      };
      const r = reader({ format, name: names[format] });
      const [certificate, chain] = value();
      const refusal = refusalOf(() => r.read(certificate, chain));
      assert.equal(refusal.status, 400);
      assert.match(refusal.detail, new RegExp(`^The ${header} header `));
      assert.match(refusal.reason, /^certificate-/);
      for (const part of [certificate, chain]) {
        if (part !== undefined && part.length > 8)
          assert.ok(!refusal.detail.includes(part.slice(0, 12)));
      }
      assert.equal(r.size, 0);
    });
  }
});
