/**
 * r‖s to DER for `crypto.verify`: the exact octets for the edge cases (leading zeros,
 * a top bit set, P-521's long length form), and, with real keys of every curve, the
 * same verdict OpenSSL gives the r‖s itself.
 */
import assert from 'node:assert/strict';
import { randomBytes, sign, verify } from 'node:crypto';
import { describe, test } from 'node:test';
import { ecdsaDerSignature, ecdsaJwsSignature } from '../../src/keys/ecdsaDer.js';
import { newKeyPair } from '../helpers/keyPairs.js';

const CURVES = [
  { curve: 'P-256', digest: 'sha256', length: 32 },
  { curve: 'P-384', digest: 'sha384', length: 48 },
  { curve: 'P-521', digest: 'sha512', length: 66 },
] as const;

describe('ecdsaDerSignature', () => {
  test('leading zero octets are dropped and a set top bit gets one zero octet', () => {
    const r = Buffer.alloc(32);
    r[31] = 1;
    const s = Buffer.alloc(32, 0xff);
    const der = ecdsaDerSignature(Buffer.concat([r, s]), 32);
    const expected = Buffer.concat([Buffer.of(0x30, 3 + 35, 0x02, 0x01, 0x01, 0x02, 33, 0x00), s]);
    assert.deepEqual(der, expected);
  });

  test('integers of zeros become one zero octet each', () => {
    assert.deepEqual(
      ecdsaDerSignature(Buffer.alloc(64), 32),
      Buffer.of(0x30, 6, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00),
    );
  });

  test('a P-521 signature over 127 octets of body takes the long length form', () => {
    const der = ecdsaDerSignature(Buffer.alloc(132, 0xff), 66) as Buffer;
    assert.deepEqual([...der.subarray(0, 6)], [0x30, 0x81, 138, 0x02, 67, 0x00]);
    assert.equal(der.length, 3 + 138);
  });

  test('a signature of any other length than two integers is none (null)', () => {
    for (const length of [0, 1, 63, 65, 128]) {
      assert.equal(ecdsaDerSignature(Buffer.alloc(length, 1), 32), null);
    }
  });

  for (const { curve, digest, length } of CURVES) {
    test(`${curve}: verifies as r‖s does, for real and for altered signatures`, () => {
      const { privateKey, publicKey } = newKeyPair('ec', { namedCurve: curve });
      for (let i = 0; i < 40; i++) {
        const data = randomBytes(40);
        const p1363 = sign(digest, data, { key: privateKey, dsaEncoding: 'ieee-p1363' });
        const altered = Buffer.from(p1363);
        const at = i % altered.length;
        altered[at] = (altered[at] as number) ^ (1 << (i % 8));
        for (const signature of [p1363, altered]) {
          const der = ecdsaDerSignature(signature, length) as Buffer;
          assert.equal(
            verify(digest, data, publicKey, der),
            verify(digest, data, { key: publicKey, dsaEncoding: 'ieee-p1363' }, signature),
          );
        }
        assert.equal(
          verify(digest, data, publicKey, ecdsaDerSignature(p1363, length) as Buffer),
          true,
        );
      }
    });
  }
});

describe('ecdsaJwsSignature', () => {
  for (const { curve, digest, length } of CURVES) {
    test(`${curve}: the DER OpenSSL signs is r‖s padded to the curve, and back again`, () => {
      const { privateKey, publicKey } = newKeyPair('ec', { namedCurve: curve });
      for (let i = 0; i < 40; i++) {
        const data = randomBytes(40);
        const der = sign(digest, data, privateKey);
        const jws = ecdsaJwsSignature(der, length);
        assert.equal(jws.length, 2 * length);
        assert.equal(
          verify(digest, data, { key: publicKey, dsaEncoding: 'ieee-p1363' }, jws),
          true,
        );
        assert.deepEqual(ecdsaDerSignature(jws, length), der);
      }
    });
  }

  test('short integers are left-padded with zeros', () => {
    const der = Buffer.of(0x30, 7, 0x02, 0x01, 0x05, 0x02, 0x02, 0x00, 0x80);
    const jws = ecdsaJwsSignature(der, 32);
    assert.equal(jws[31], 5);
    assert.equal(jws[63], 0x80);
    assert.equal(
      jws.subarray(0, 31).every((o) => o === 0),
      true,
    );
    assert.equal(
      jws.subarray(32, 63).every((o) => o === 0),
      true,
    );
  });

  test('anything but a SEQUENCE of two INTEGERs that fit the curve throws', () => {
    const cases = [
      Buffer.of(0x31, 6, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01),
      Buffer.of(0x30, 7, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01),
      Buffer.of(0x30, 6, 0x04, 0x01, 0x01, 0x02, 0x01, 0x01),
      Buffer.of(0x30, 3, 0x02, 0x01, 0x01),
      Buffer.concat([
        Buffer.of(0x30, 37, 0x02, 33, 0x01),
        Buffer.alloc(32, 1),
        Buffer.of(0x02, 0x01, 0x01),
      ]),
    ];
    for (const der of cases) assert.throws(() => ecdsaJwsSignature(der, 32));
  });
});
