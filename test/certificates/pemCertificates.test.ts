import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  certificatesOfFile,
  PemError,
  pemCertificateBlocks,
  revocationListsOfFile,
} from '../../src/certificates/pemCertificates.js';
import { INTERMEDIATE, LEAF, pem } from './formatFixtures.js';

describe('PEM certificate blocks in a header', () => {
  const accepted: ReadonlyArray<readonly [string, string, Buffer[]]> = [
    ['one block', pem(LEAF), [LEAF]],
    ['two blocks', pem(LEAF) + pem(INTERMEDIATE), [LEAF, INTERMEDIATE]],
    [
      'two blocks with a blank line between',
      `${pem(LEAF)}\n${pem(INTERMEDIATE)}`,
      [LEAF, INTERMEDIATE],
    ],
    ['CRLF line ends', pem(LEAF, '\r\n'), [LEAF]],
    [
      'the base64 on one line',
      `-----BEGIN CERTIFICATE-----${LEAF.toString('base64')}-----END CERTIFICATE-----`,
      [LEAF],
    ],
  ];
  for (const [name, text, blocks] of accepted) {
    test(`reads ${name}`, () => assert.deepEqual(pemCertificateBlocks(text), blocks));
  }

  const refused: ReadonlyArray<readonly [string, string]> = [
    ['text before', `hello\n${pem(LEAF)}`],
    ['text after', `${pem(LEAF)}bye`],
    ['another label', pem(LEAF).replace(/CERTIFICATE/g, 'X509 CRL')],
    ['a block left open', '-----BEGIN CERTIFICATE-----\nMIIB\n'],
    ['a block opened twice', `-----BEGIN CERTIFICATE-----\n${pem(LEAF)}`],
    ['an empty block', '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n'],
    ['a character outside base64', pem(LEAF).replace('MII', 'M!I')],
    ['base64 of a wrong length', pem(LEAF).replace(/\n-----END/, 'A\n-----END')],
    ['nothing', ''],
  ];
  for (const [name, text] of refused) {
    test(`refuses ${name}`, () => assert.throws(() => pemCertificateBlocks(text), PemError));
  }
});

describe('CA and CRL files', () => {
  test('a CA file may carry text between its blocks, as OpenSSL writes bundles', () => {
    const file = Buffer.from(`subject=CN=one\n${pem(LEAF)}\nsubject=CN=two\n${pem(INTERMEDIATE)}`);
    assert.deepEqual(certificatesOfFile(file), [LEAF, INTERMEDIATE]);
  });

  test('a file without PEM is one DER certificate', () => {
    assert.deepEqual(certificatesOfFile(LEAF), [LEAF]);
  });

  test('an empty file, or PEM without a certificate, holds none', () => {
    assert.throws(() => certificatesOfFile(Buffer.alloc(0)), PemError);
    assert.throws(() => certificatesOfFile(Buffer.from('-----BEGIN PRIVATE KEY-----\n')), PemError);
  });

  test('CRL files hold X509 CRL blocks, or one DER CRL', () => {
    const block = pem(LEAF).replace(/CERTIFICATE/g, 'X509 CRL');
    assert.deepEqual(revocationListsOfFile(Buffer.from(block + block)), [LEAF, LEAF]);
    assert.deepEqual(revocationListsOfFile(LEAF), [LEAF]);
    assert.throws(() => revocationListsOfFile(Buffer.from(pem(LEAF))), PemError);
  });
});
