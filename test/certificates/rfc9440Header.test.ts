import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HeaderFormatError } from '../../src/certificates/headerFormat.js';
import { parseRfc9440 } from '../../src/certificates/rfc9440Header.js';
import { byteSequence, INTERMEDIATE, LEAF, ROOT } from './formatFixtures.js';

const leaf = byteSequence(LEAF);
const intermediate = byteSequence(INTERMEDIATE);
const root = byteSequence(ROOT);

describe('RFC 9440 Client-Cert and Client-Cert-Chain', () => {
  const accepted: ReadonlyArray<
    readonly [string, string | undefined, string | undefined, Buffer[]]
  > = [
    ['a Byte Sequence alone', leaf, undefined, []],
    ['a Byte Sequence with a parameter (ignored)', `${leaf};v=1`, undefined, []],
    ['a Byte Sequence between spaces', `  ${leaf} `, undefined, []],
    ['a Byte Sequence without base64 padding', `:${LEAF.toString('base64')}:`, undefined, []],
    ['the chain: one intermediate', leaf, intermediate, [INTERMEDIATE]],
    ['the chain: two, in TLS order', leaf, `${intermediate}, ${root}`, [INTERMEDIATE, ROOT]],
    [
      'the chain as Node joins two lines of it',
      leaf,
      `${intermediate}, ${root}`,
      [INTERMEDIATE, ROOT],
    ],
    [
      'the chain with parameters on its members',
      leaf,
      `${intermediate};a=1, ${root}`,
      [INTERMEDIATE, ROOT],
    ],
    ['an empty chain', leaf, '', []],
  ];
  for (const [name, certificate, chain, intermediates] of accepted) {
    test(`accepts ${name}`, () => {
      const presented = parseRfc9440(certificate, chain);
      assert.deepEqual(presented.leaf, LEAF);
      assert.deepEqual(presented.chain, intermediates);
    });
  }

  const refused: ReadonlyArray<readonly [string, string | undefined, string | undefined, string]> =
    [
      ['a token, not a Byte Sequence', 'MIIBqDCCAU6g', undefined, 'certificate'],
      ['a string', `"${LEAF.toString('base64')}"`, undefined, 'certificate'],
      ['two Byte Sequences (a list)', `${leaf}, ${leaf}`, undefined, 'certificate'],
      ['base64 outside the alphabet', ':MIIB$qDCC:', undefined, 'certificate'],
      [
        'base64url instead of base64',
        `:${LEAF.toString('base64url')}-_:`,
        undefined,
        'certificate',
      ],
      ['an unterminated Byte Sequence', `:${LEAF.toString('base64')}`, undefined, 'certificate'],
      ['text after the Byte Sequence', `${leaf} x`, undefined, 'certificate'],
      ['an empty value', '', undefined, 'certificate'],
      ['the chain without the certificate', undefined, intermediate, 'chain'],
      ['a chain member that is a token', leaf, `${intermediate}, abc`, 'chain'],
      ['a chain member that is an inner list', leaf, `(${intermediate})`, 'chain'],
      ['a chain with a trailing comma', leaf, `${intermediate},`, 'chain'],
    ];
  for (const [name, certificate, chain, field] of refused) {
    test(`refuses ${name}`, () => {
      assert.throws(
        () => parseRfc9440(certificate, chain),
        (error: unknown) =>
          error instanceof HeaderFormatError &&
          error.reason === 'certificate-header-malformed' &&
          error.field === field,
      );
    });
  }
});
