/**
 * The registered-claim checks after the signature, each named by its private reason,
 * with a fixed `now` and a 60-second skew.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PortariaError } from '../../src/errors.js';
import { checkRegisteredClaims } from '../../src/verify/registeredClaims.js';

const NOW = 1_800_000_000;
const RULES = {
  issuer: 'https://portaria.test',
  audiences: ['orders-api', 'billing-api'],
  clockSkewSeconds: 60,
  requireTyp: true,
};

function claims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const all: Record<string, unknown> = {
    iss: RULES.issuer,
    sub: 'acme',
    aud: 'orders-api',
    iat: NOW,
    nbf: NOW,
    exp: NOW + 600,
    jti: 't-1',
    ...overrides,
  };
  for (const [name, value] of Object.entries(overrides)) if (value === undefined) delete all[name];
  return all;
}

function outcome(
  payload: Record<string, unknown>,
  header: Record<string, unknown> = { typ: 'at+jwt' },
  rules = RULES,
): string {
  try {
    checkRegisteredClaims(header, payload, rules, NOW);
    return 'accepted';
  } catch (error) {
    assert.ok(error instanceof PortariaError);
    return `${error.code} ${error.reason}`;
  }
}

describe('checkRegisteredClaims', () => {
  const cases: [string, Record<string, unknown>, Record<string, unknown> | undefined, string][] = [
    ['every claim right', claims(), undefined, 'accepted'],
    // typ, compared as a media type.
    ['typ application/at+jwt', claims(), { typ: 'application/at+jwt' }, 'accepted'],
    ['typ AT+JWT', claims(), { typ: 'AT+JWT' }, 'accepted'],
    ['typ JWT', claims(), { typ: 'JWT' }, 'token-invalid wrong-typ'],
    ['typ x/at+jwt', claims(), { typ: 'x/at+jwt' }, 'token-invalid wrong-typ'],
    ['no typ', claims(), {}, 'token-invalid wrong-typ'],
    ['a numeric typ', claims(), { typ: 1 }, 'token-invalid wrong-typ'],
    // Presence: the first missing claim in the order iss, aud, jti, iat, exp, sub.
    ['no iss', claims({ iss: undefined }), undefined, 'token-invalid wrong-issuer'],
    ['no aud', claims({ aud: undefined }), undefined, 'token-invalid wrong-audience'],
    ['no jti', claims({ jti: undefined }), undefined, 'token-invalid missing-claim'],
    ['no iat', claims({ iat: undefined }), undefined, 'token-invalid bad-iat'],
    ['no exp', claims({ exp: undefined }), undefined, 'token-invalid bad-exp'],
    ['no sub', claims({ sub: undefined }), undefined, 'token-invalid missing-claim'],
    [
      'no sub and no aud: aud first',
      claims({ sub: undefined, aud: undefined }),
      undefined,
      'token-invalid wrong-audience',
    ],
    // Values.
    ['another iss', claims({ iss: 'https://evil.test' }), undefined, 'token-invalid wrong-issuer'],
    ['iss as an array', claims({ iss: [RULES.issuer] }), undefined, 'token-invalid wrong-issuer'],
    ['the second audience', claims({ aud: 'billing-api' }), undefined, 'accepted'],
    ['an audience array holding ours', claims({ aud: ['x', 'orders-api'] }), undefined, 'accepted'],
    [
      'an audience array without ours',
      claims({ aud: ['x', 'y'] }),
      undefined,
      'token-invalid wrong-audience',
    ],
    ['another audience', claims({ aud: 'x' }), undefined, 'token-invalid wrong-audience'],
    ['a numeric aud', claims({ aud: 1 }), undefined, 'token-invalid wrong-audience'],
    ['a string iat', claims({ iat: String(NOW) }), undefined, 'token-invalid bad-iat'],
    ['a string nbf', claims({ nbf: String(NOW) }), undefined, 'token-invalid not-yet-valid'],
    ['nbf null', claims({ nbf: null }), undefined, 'token-invalid not-yet-valid'],
    ['no nbf', claims({ nbf: undefined }), undefined, 'accepted'],
    ['nbf at now + skew', claims({ nbf: NOW + 60 }), undefined, 'accepted'],
    ['nbf after now + skew', claims({ nbf: NOW + 61 }), undefined, 'token-invalid not-yet-valid'],
    ['a string exp', claims({ exp: String(NOW + 600) }), undefined, 'token-invalid bad-exp'],
    ['exp just after now − skew', claims({ exp: NOW - 59 }), undefined, 'accepted'],
    ['exp at now − skew', claims({ exp: NOW - 60 }), undefined, 'token-expired expired'],
    // Order among the time claims: iat's type, then nbf, then exp.
    [
      'a string iat on an expired token',
      claims({ iat: 'x', exp: NOW - 3600 }),
      undefined,
      'token-invalid bad-iat',
    ],
    [
      'nbf ahead on an expired token',
      claims({ nbf: NOW + 3600, exp: NOW - 3600 }),
      undefined,
      'token-invalid not-yet-valid',
    ],
    [
      'a wrong typ on an expired token',
      claims({ exp: NOW - 3600 }),
      { typ: 'JWT' },
      'token-invalid wrong-typ',
    ],
  ];
  for (const [input, payload, header, expected] of cases) {
    test(`${input} → ${expected}`, () => {
      assert.equal(outcome(payload, header), expected);
    });
  }

  test('an issuer that does not require typ accepts a token without one', () => {
    assert.equal(outcome(claims(), {}, { ...RULES, requireTyp: false }), 'accepted');
  });
});
