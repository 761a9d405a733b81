import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HeaderFormatError } from '../../src/certificates/headerFormat.js';
import { parseEscapedPem } from '../../src/certificates/nginxHeader.js';
import { escapedPem, INTERMEDIATE, LEAF, pem } from './formatFixtures.js';

describe('nginx $ssl_client_escaped_cert', () => {
  const accepted: ReadonlyArray<readonly [string, string]> = [
    ['a URL-encoded PEM, as nginx writes it', escapedPem(LEAF)],
    ['a URL-encoded PEM without the last newline', encodeURIComponent(pem(LEAF).trimEnd())],
    ['a URL-encoded PEM with CRLF lines', encodeURIComponent(pem(LEAF, '\r\n'))],
    [
      'a URL-encoded PEM with +, / and = left as they are (AWS ALB)',
      encodeURIComponent(pem(LEAF)).replace(/%2B/g, '+').replace(/%2F/g, '/').replace(/%3D/g, '='),
    ],
    [
      'a URL-encoded PEM in lower-case hex',
      escapedPem(LEAF).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    ],
  ];
  for (const [name, value] of accepted) {
    test(`accepts ${name}`, () => {
      assert.deepEqual(parseEscapedPem(value), { leaf: LEAF, chain: [] });
    });
  }

  const refused: ReadonlyArray<readonly [string, string]> = [
    ['a PEM that is not URL-encoded ($ssl_client_cert)', pem(LEAF).replace(/\n/g, ' ')],
    ['two certificates', encodeURIComponent(pem(LEAF) + pem(INTERMEDIATE))],
    ['a PEM with trailing junk', encodeURIComponent(`${pem(LEAF)}junk`)],
    ['text before the PEM', encodeURIComponent(`subject=CN=acme\n${pem(LEAF)}`)],
    [
      'a private key instead of a certificate',
      encodeURIComponent(pem(LEAF).replace(/CERTIFICATE/g, 'PRIVATE KEY')),
    ],
    ['an unclosed block', encodeURIComponent(pem(LEAF).split('-----END')[0] as string)],
    ['garbage base64 inside the block', encodeURIComponent(pem(LEAF).replace('MII', 'M*I'))],
    [
      'base64 with padding in the middle',
      encodeURIComponent(pem(Buffer.concat([LEAF, LEAF])).replace(/A/, '=')),
    ],
    ['bad percent-encoding', `${escapedPem(LEAF)}%E0%A4%A`],
    ['percent-encoding that is not UTF-8', '%C0%AE'],
    ['an empty value', ''],
    ['base64 DER without PEM armour', LEAF.toString('base64')],
  ];
  for (const [name, value] of refused) {
    test(`refuses ${name}`, () => {
      assert.throws(
        () => parseEscapedPem(value),
        (error: unknown) =>
          error instanceof HeaderFormatError && error.reason === 'certificate-header-malformed',
      );
    });
  }

  test('a refusal never repeats the value', () => {
    const value = encodeURIComponent(`${pem(LEAF)}secret-looking-junk`);
    assert.throws(
      () => parseEscapedPem(value),
      (error: unknown) =>
        error instanceof Error &&
        !error.message.includes('secret-looking-junk') &&
        !error.message.includes(LEAF.toString('base64').slice(0, 12)),
    );
  });
});
