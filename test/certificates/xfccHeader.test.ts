import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HeaderFormatError } from '../../src/certificates/headerFormat.js';
import { parseXfcc, xfccElements } from '../../src/certificates/xfccHeader.js';
import { INTERMEDIATE, LEAF, pem, ROOT, sha256Hex } from './formatFixtures.js';

const cert = `Cert="${encodeURIComponent(pem(LEAF))}"`;
const hash = `Hash=${sha256Hex(LEAF)}`;
const chain = `Chain="${encodeURIComponent(pem(LEAF) + pem(INTERMEDIATE))}"`;
const subject = 'Subject="CN=acme,OU=partners,O=Example\\, Inc."';

describe('Envoy X-Forwarded-Client-Cert', () => {
  test('splits elements and pairs, reading quotes and escapes', () => {
    assert.deepEqual(xfccElements('By=spiffe://a;Hash=1,By=spiffe://b;Subject="x;y,\\"z\\""'), [
      [
        ['by', 'spiffe://a'],
        ['hash', '1'],
      ],
      [
        ['by', 'spiffe://b'],
        ['subject', 'x;y,"z"'],
      ],
    ]);
  });

  const accepted: ReadonlyArray<readonly [string, string, Buffer[]]> = [
    ['Cert alone', cert, []],
    [
      'Hash and Cert, as Envoy writes them',
      `By=spiffe://cluster.local/ns/edge;${hash};${cert};${subject};URI=spiffe://partner/acme`,
      [],
    ],
    ['the Hash in upper case', `Hash=${sha256Hex(LEAF).toUpperCase()};${cert}`, []],
    ['lower-case keys', `hash=${sha256Hex(LEAF)};cert="${encodeURIComponent(pem(LEAF))}"`, []],
    [
      'several DNS and URI pairs',
      `${cert};DNS=a.example;DNS=b.example;URI=spiffe://x;URI=spiffe://y`,
      [],
    ],
    ['a Chain that starts with the leaf', `${hash};${cert};${chain}`, [INTERMEDIATE]],
    [
      'a Chain with the root too',
      `${cert};Chain="${encodeURIComponent(pem(LEAF) + pem(INTERMEDIATE) + pem(ROOT))}"`,
      [INTERMEDIATE, ROOT],
    ],
    [
      'the last of several elements (the nearest proxy’s)',
      `By=spiffe://far;Cert="${encodeURIComponent(pem(ROOT))}",By=spiffe://near;${hash};${cert}`,
      [],
    ],
    ['spaces around separators', ` ${hash} ; ${cert} `, []],
    ['an unknown key (ignored)', `${cert};Future=1`, []],
  ];
  for (const [name, value, intermediates] of accepted) {
    test(`accepts ${name}`, () => {
      const presented = parseXfcc(value);
      assert.deepEqual(presented.leaf, LEAF);
      assert.deepEqual(presented.chain, intermediates);
    });
  }

  const refused: ReadonlyArray<readonly [string, string, string]> = [
    [
      'Hash alone (not a certificate)',
      `By=spiffe://edge;${hash};${subject}`,
      'certificate-header-no-cert',
    ],
    [
      'a last element without Cert after one with it',
      `${cert},By=spiffe://near;${hash}`,
      'certificate-header-no-cert',
    ],
    [
      'a Hash of another certificate',
      `Hash=${sha256Hex(ROOT)};${cert}`,
      'certificate-hash-mismatch',
    ],
    ['a Hash that is not a SHA-256', `Hash=abc;${cert}`, 'certificate-header-malformed'],
    ['two Certs in one element', `${cert};${cert}`, 'certificate-header-malformed'],
    [
      'two certificates inside Cert',
      `Cert="${encodeURIComponent(pem(LEAF) + pem(ROOT))}"`,
      'certificate-header-malformed',
    ],
    [
      'a Cert with trailing junk',
      `Cert="${encodeURIComponent(`${pem(LEAF)}junk`)}"`,
      'certificate-header-malformed',
    ],
    ['a Cert with bad percent-encoding', 'Cert="%E0%A4%A"', 'certificate-header-malformed'],
    ['an unclosed quote', `Cert="${encodeURIComponent(pem(LEAF))}`, 'certificate-header-malformed'],
    ['text after a quoted value', `${cert}x;${hash}`, 'certificate-header-malformed'],
    ['a pair without =', `${cert};Hash`, 'certificate-header-malformed'],
    ['an empty element', `${cert},,${cert}`, 'certificate-header-malformed'],
    ['a trailing comma', `${cert},`, 'certificate-header-malformed'],
    ['a quote inside an unquoted value', `By=a"b;${cert}`, 'certificate-header-malformed'],
    ['a malformed earlier element', `By="open,${cert}`, 'certificate-header-malformed'],
    ['an empty value', '', 'certificate-header-malformed'],
  ];
  for (const [name, value, reason] of refused) {
    test(`refuses ${name}`, () => {
      assert.throws(
        () => parseXfcc(value),
        (error: unknown) => error instanceof HeaderFormatError && error.reason === reason,
      );
    });
  }
});
