/**
 * The credentials step's bearer-token extractor (RFC 6750 §2.1) on its own: the Authorization value, how
 * many Authorization lines the request carried, and the raw query (with its `?`), as the
 * gateway hands them over. A refusal is named by its code and private reason.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PortariaError } from '../../src/errors.js';
import { EdgeChallenge } from '../../src/http/challenge.js';
import { bearerToken } from '../../src/pipeline/credentials.js';
import { MAX_TOKEN_LENGTH } from '../../src/verify/invalidToken.js';

const WWW_AUTHENTICATE_MISSING = 'Bearer realm="portaria"';
const WWW_AUTHENTICATE_INVALID = 'Bearer realm="portaria", error="invalid_token"';

/** The edge's response headers for a refusal: its own, and the challenge it implies. */
function headersOf(error: PortariaError): Record<string, string | undefined> {
  const challenge = new EdgeChallenge(null).header(error, { target: null, route: null });
  return { ...error.headers, 'www-authenticate': challenge };
}

const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhY21lIn0.c2lnbmF0dXJl';

/** `token <value>`, or `refused <code> <reason>`. */
function extracted(
  authorization: string | undefined,
  lines = authorization === undefined ? 0 : 1,
  search = '',
): string {
  try {
    return `token ${bearerToken(authorization, lines, search)}`;
  } catch (error) {
    assert.ok(error instanceof PortariaError);
    return `refused ${error.code} ${error.reason}`;
  }
}

function refusal(authorization: string | undefined, lines = 1, search = ''): PortariaError {
  try {
    bearerToken(authorization, lines, search);
  } catch (error) {
    assert.ok(error instanceof PortariaError);
    return error;
  }
  assert.fail('a token was extracted');
}

describe('bearerToken', () => {
  describe('the Authorization header', () => {
    const cases: [string, string | undefined, string][] = [
      ['Bearer and one token', `Bearer ${TOKEN}`, `token ${TOKEN}`],
      ['the scheme in any case', `bEaReR ${TOKEN}`, `token ${TOKEN}`],
      ['several spaces around the token', `Bearer   ${TOKEN}  `, `token ${TOKEN}`],
      ['no Authorization header', undefined, 'refused token-missing no-authorization'],
      ['the Basic scheme', 'Basic YWNtZTpzZWNyZXQ=', 'refused token-missing other-scheme'],
      ['a token without a scheme', TOKEN, 'refused token-missing other-scheme'],
      ['Bearer joined to its token', `Bearer${TOKEN}`, 'refused token-missing other-scheme'],
      ['a tab after Bearer', `Bearer\t${TOKEN}`, 'refused token-missing other-scheme'],
      ['Bearer alone', 'Bearer', 'refused token-invalid empty-token'],
      ['Bearer and a space', 'Bearer ', 'refused token-invalid empty-token'],
      ['Bearer and only spaces', 'Bearer    ', 'refused token-invalid empty-token'],
      ['a token of the longest length', `Bearer ${'a'.repeat(MAX_TOKEN_LENGTH)}`, 'token'],
      [
        'a token one character over the longest length',
        `Bearer ${'a'.repeat(MAX_TOKEN_LENGTH + 1)}`,
        'refused token-invalid token-too-long',
      ],
    ];
    for (const [input, authorization, expected] of cases) {
      test(`${input} → ${expected.startsWith('token') ? 'the token' : expected}`, () => {
        const result = extracted(authorization);
        if (expected === 'token') assert.equal(result.split(' ')[0], 'token');
        else assert.equal(result, expected);
      });
    }

    test('two tokens in one header are handed on as one value, which is no compact JWS', () => {
      // The verifier's compact-form check (compactJws.ts) refuses the space.
      assert.equal(extracted(`Bearer ${TOKEN} ${TOKEN}`), `token ${TOKEN} ${TOKEN}`);
    });

    test('a missing token or another scheme asks for a token without an error code (RFC 6750 §3.1)', () => {
      for (const authorization of [undefined, 'Basic YWNtZTpzZWNyZXQ=']) {
        const error = refusal(authorization, authorization === undefined ? 0 : 1);
        assert.equal(error.status, 401);
        assert.deepEqual(headersOf(error), { 'www-authenticate': WWW_AUTHENTICATE_MISSING });
      }
    });

    test('an unusable bearer value answers invalid_token', () => {
      const error = refusal('Bearer ');
      assert.equal(error.status, 401);
      assert.deepEqual(headersOf(error), { 'www-authenticate': WWW_AUTHENTICATE_INVALID });
    });
  });

  describe('several Authorization lines', () => {
    test('two lines are refused even when both carry the same valid token', () => {
      assert.equal(extracted(`Bearer ${TOKEN}`, 2), 'refused token-invalid multiple-authorization');
    });

    test('two lines are refused before the scheme is read', () => {
      assert.equal(
        extracted('Basic YWNtZTpzZWNyZXQ=', 3),
        'refused token-invalid multiple-authorization',
      );
    });
  });

  describe('access_token in the query (RFC 6750 §2.3, not accepted)', () => {
    const named = [
      '?access_token=x',
      '?x=1&access_token=x',
      '?access_token',
      '?%61ccess_token=x',
      '?access%5Ftoken=x',
      '?%61%63%63%65%73%73%5f%74%6f%6b%65%6e=x',
      '?Access_Token=x',
      '?ACCESS_TOKEN=x',
      '?access.token=x',
      '?access+token=x',
      '?access%20token=x',
      '?access[token=x',
      '?x=1;access_token=x',
    ];
    for (const search of named) {
      test(`${search} is refused alongside a valid header`, () => {
        assert.equal(
          extracted(`Bearer ${TOKEN}`, 1, search),
          'refused token-invalid token-in-query',
        );
      });
    }

    test('a query token without any header is refused as a token in the query, not a missing one', () => {
      assert.equal(
        extracted(undefined, 0, '?access_token=x'),
        'refused token-invalid token-in-query',
      );
    });

    for (const search of [
      '?access=1',
      '?access_tokens=1',
      '?my_access_token=1',
      '?q=access_token',
      '?access_token_=1',
      '?%25access_token=1',
      '?',
    ]) {
      test(`${search} merely resembles access_token and is let through`, () => {
        assert.equal(extracted(`Bearer ${TOKEN}`, 1, search), `token ${TOKEN}`);
      });
    }
  });
});
