/**
 * The compact JWS form and its one spelling, driven through `assertCompactJws` with a
 * case table named after its input. The tokens are hand-made: only the encoding matters.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  assertCompactJws,
  base64urlLength,
  base64urlValue,
  signatureSegmentLength,
} from '../../src/verify/compactJws.js';

/** `assertCompactJws`'s verdict: `accepted`, or the private reason of the refusal. */
function verdict(token: string): string {
  try {
    assertCompactJws(token);
    return 'accepted';
  } catch (error) {
    assert.equal((error as { code?: string }).code, 'token-invalid');
    return (error as { reason: string }).reason;
  }
}

const b64 = (octets: number[]) => Buffer.from(octets).toString('base64url');
const H = b64([1, 2, 3]); // 4 characters: no unused bits
const P = b64([1, 2, 3, 4]); // 6 characters (≡ 2 mod 4): 4 unused bits
const S = b64([1, 2, 3, 4, 5]); // 7 characters (≡ 3 mod 4): 2 unused bits

describe('assertCompactJws', () => {
  const cases: [string, string, string][] = [
    ['three canonical segments', `${H}.${P}.${S}`, 'accepted'],
    [
      'every segment ending in each canonical last character',
      `${b64([0xff])}.${b64([0xff, 0xff])}.${b64([0, 0, 0])}`,
      'accepted',
    ],
    [
      'a header of four characters ending in _ (no unused bits)',
      `${H.slice(0, 3)}_.${P}.${S}`,
      'accepted',
    ],
    [
      'a payload with the lowest unused bit set (AQIDBA → AQIDBB)',
      `${H}.AQIDBB.${S}`,
      'non-canonical',
    ],
    [
      'a payload with the highest unused bit set (AQIDBA → AQIDBI)',
      `${H}.AQIDBI.${S}`,
      'non-canonical',
    ],
    [
      'a signature with an unused bit set (AQIDBAU → AQIDBAV)',
      `${H}.${P}.AQIDBAV`,
      'non-canonical',
    ],
    [
      'a signature with both unused bits set (AQIDBAU → AQIDBAX)',
      `${H}.${P}.AQIDBAX`,
      'non-canonical',
    ],
    ['a header of one character (≡ 1 mod 4)', `A.${P}.${S}`, 'non-canonical'],
    ['a signature of five characters (≡ 1 mod 4)', `${H}.${P}.AQIDB`, 'non-canonical'],
    ['a padded signature', `${H}.${P}.${S}=`, 'malformed'],
    ['a padded payload', `${H}.${P}==.${S}`, 'malformed'],
    ['the standard alphabet’s + and /', `${H}.${P}.AQ+/BAU`, 'malformed'],
    ['a space inside a segment', `${H}.${P}.AQI BAU`, 'malformed'],
    ['an empty signature (alg none)', `${H}.${P}.`, 'malformed'],
    ['two segments', `${H}.${P}`, 'malformed'],
    ['five segments (JWE)', `${H}.${P}.${S}.${S}.${S}`, 'malformed'],
  ];
  for (const [name, token, expected] of cases) {
    test(`${name} → ${expected}`, () => {
      assert.equal(verdict(token), expected);
    });
  }

  test('every length and last character: canonical exactly when an encoder writes it', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const written = new Set<string>();
    for (let octets = 1; octets <= 3; octets++) {
      for (let last = 0; last < 256; last++) {
        written.add(b64([...Array(octets - 1).fill(0), last]));
      }
    }
    for (let length = 1; length <= 4; length++) {
      for (const char of alphabet) {
        const segment = 'A'.repeat(length - 1) + char;
        const expected = written.has(segment) ? 'accepted' : 'non-canonical';
        assert.equal(verdict(`${H}.${P}.${segment}`), expected, segment);
      }
    }
  });
});

describe('signature segment length', () => {
  test('base64urlLength is the unpadded encoding length', () => {
    for (const octets of [1, 2, 3, 64, 96, 114, 132, 256, 257, 384, 512]) {
      assert.equal(base64urlLength(octets), b64(Array(octets).fill(0)).length, String(octets));
    }
  });

  test('signatureSegmentLength counts the characters after the last dot', () => {
    assert.equal(signatureSegmentLength(`${H}.${P}.${S}`), S.length);
  });
});

describe('base64urlValue', () => {
  test("each alphabet character's 6-bit value (RFC 4648 §5), 0 for any other code", () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (const [value, char] of [...alphabet].entries()) {
      assert.equal(base64urlValue(char.charCodeAt(0)), value, char);
    }
    for (const char of ['=', '+', '/', '.', ' ', 'é', '☃']) {
      assert.equal(base64urlValue(char.charCodeAt(0)), 0, char);
    }
  });
});
