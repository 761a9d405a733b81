import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseRequestTarget, TOKEN_PATH } from '../../src/domain/requestPath.js';
import { isPortariaError } from '../../src/errors.js';
import {
  codePointName,
  INVISIBLE_IGNORABLES,
  percentEncoded,
} from '../helpers/defaultIgnorable.js';

const accepted: ReadonlyArray<readonly [string, string, string]> = [
  ['/', '/', ''],
  ['/v1/orders', '/v1/orders', ''],
  ['/v1/orders/', '/v1/orders/', ''],
  ['/v1/orders?x=1&y=%2e', '/v1/orders', '?x=1&y=%2e'],
  ['/v1/orders?', '/v1/orders', '?'],
  ['/v1/orders?a=../b//c', '/v1/orders', '?a=../b//c'],
  ['/V1/Authentication/AccessToken', '/V1/Authentication/AccessToken', ''],
  [`${TOKEN_PATH}/`, `${TOKEN_PATH}/`, ''],
  ['/v1/files/a.b/.hidden/..x/x..y', '/v1/files/a.b/.hidden/..x/x..y', ''],
  ['/v1/files/a%20b/%20c', '/v1/files/a%20b/%20c', ''],
  ['/v1/things/123:cancel', '/v1/things/123:cancel', ''],
  ['/v1/users/~alice', '/v1/users/~alice', ''],
  ['/v1/%C3%A9t%C3%A9', '/v1/%C3%A9t%C3%A9', ''],
  ['/v1/streets/Hauptstra%C3%9Fe', '/v1/streets/Hauptstra%C3%9Fe', ''],
  ['/v1/geo/2001:db8::1', '/v1/geo/2001:db8::1', ''],
  ['/v1/ip/::1', '/v1/ip/::1', ''],
  ['/v1/npm/react@~18.2.0', '/v1/npm/react@~18.2.0', ''],
  ['/v1/pkg/version~12345678', '/v1/pkg/version~12345678', ''],
  ['/v1/%E4%B8%AD%E6%96%87/%C3%B1', '/v1/%E4%B8%AD%E6%96%87/%C3%B1', ''],
  ['/v1/a%20b/%C3%A9/%3A%40%21', '/v1/a%20b/%C3%A9/%3A%40%21', ''],
  ['/v1/%F0%9F%98%80/%e2%82%ac', '/v1/%F0%9F%98%80/%e2%82%ac', ''],
  ['/v1/orders?q=%C0%AE', '/v1/orders', '?q=%C0%AE'],
  ['/v1/%25/x', '/v1/%25/x', ''],
  ['/v1/a%2520b', '/v1/a%2520b', ''],
  ['/v1/orders?q=%3f%23%2572', '/v1/orders', '?q=%3f%23%2572'],
];

const refused: ReadonlyArray<readonly [string, string]> = [
  ['', 'not-origin-form'],
  ['*', 'not-origin-form'],
  ['http://example.com/v1/orders', 'not-origin-form'],
  ['example.com:443', 'not-origin-form'],
  ['v1/orders', 'not-origin-form'],
  ['//v1/orders', 'empty-segment'],
  ['/v1//orders', 'empty-segment'],
  ['/v1/orders//', 'empty-segment'],
  ['/.', 'dot-segment'],
  ['/..', 'dot-segment'],
  ['/v1/./orders', 'dot-segment'],
  ['/v1/orders/..', 'dot-segment'],
  ['/v1/orders/../admin', 'dot-segment'],
  [`${TOKEN_PATH}/../../orders`, 'dot-segment'],
  ['/v1/orders/..;/admin', 'dot-segment'],
  ['/v1/orders/.;x/admin', 'dot-segment'],
  ['/v1/orders/..;', 'dot-segment'],
  ['/v1/orders;jsessionid=1', 'path-parameter'],
  ['/v1;x/orders', 'path-parameter'],
  [`${TOKEN_PATH};x`, 'path-parameter'],
  ['/v1/orders%3B1', 'encoded'],
  ['/v1/orders/..?x', 'dot-segment'],
  [`${TOKEN_PATH}%2f..`, 'encoded'],
  ['/v1/orders%2F..%2Fadmin', 'encoded'],
  ['/v1/%2e%2e/admin', 'encoded'],
  ['/v1/%2E/admin', 'encoded'],
  ['/v1/orders%5cadmin', 'encoded'],
  ['/v1/orders%5Cadmin', 'encoded'],
  ['/v1/orders%00', 'encoded'],
  ['/v1/orders%0a', 'encoded'],
  ['/v1/orders%7F', 'encoded'],
  ['/v1/orders%252e%252e', 'double-encoded'],
  ['/v1/orders%252F', 'double-encoded'],
  ['/v1/orders%255c', 'double-encoded'],
  ['/v1/%2572eports', 'double-encoded'],
  ['/v1/%25/%2541', 'double-encoded'],
  ['/v1/orders%253F', 'double-encoded'],
  ['/v1/orders%252523', 'double-encoded'],
  ['/v1/orders/%3f', 'encoded'],
  ['/v1/reports%3Fx', 'encoded'],
  ['/v1/reports%23x', 'encoded'],
  ['/v1/orders/%C0%AE%C0%AE/admin', 'not-utf8'],
  ['/v1/orders/%c0%af', 'not-utf8'],
  ['/v1/orders/%E0%80%AE', 'not-utf8'],
  ['/v1/orders/%ED%A0%80', 'not-utf8'],
  ['/v1/orders/%F4%90%80%80', 'not-utf8'],
  ['/v1/orders/%80', 'not-utf8'],
  ['/v1/orders/%C3', 'not-utf8'],
  ['/v1/orders/%FF', 'not-utf8'],
  ['/v1/%6frders/1', 'encoded-unreserved'],
  ['/v1/%4Frders/1', 'encoded-unreserved'],
  ['/v1/ord%65rs', 'encoded-unreserved'],
  ['/v1/orders/%31', 'encoded-unreserved'],
  ['/v1/orders/%2D%5F%7E', 'encoded-unreserved'],
  ['/v1/%25%32%65%25%32%65/admin', 'encoded-unreserved'],
  ['/v1/orders%zz', 'bad-percent'],
  ['/v1/orders%2', 'bad-percent'],
  ['/v1/orders%', 'bad-percent'],
  ['/v1/orders%g0', 'bad-percent'],
  ['/v1/orders\\..\\admin', 'backslash'],
  ['/v1\\orders', 'backslash'],
  ['/v1/orders#frag', 'fragment'],
  ['/v1/orders?a=1#frag', 'fragment'],
  ['/v1/orders?#', 'fragment'],
  ['/v1/files/x..', 'trailing-dot'],
  ['/v1/files/...', 'trailing-dot'],
  ['/v1./orders', 'trailing-dot'],
  ['/v1/orders.', 'trailing-dot'],
  ['/v1/orders%20', 'trailing-space'],
  ['/v1%20/orders', 'trailing-space'],
  ['/v1%EF%BC%8Forders', 'ambiguous-unicode'],
  ['/v1/orders%C2%A0', 'ambiguous-unicode'],
  ['/v1/orders%E2%80%8B', 'ambiguous-unicode'],
  ['/v1/orders%E2%80%AE', 'ambiguous-unicode'],
  ['/v1/e%CC%81', 'ambiguous-unicode'],
  ['/v1/%EF%AC%81le', 'ambiguous-unicode'],
  ['/v1/%C4%B1nvoices', 'ambiguous-unicode'],
  ['/v1/%C4%B0nvoices', 'ambiguous-unicode'],
  ['/v1/reports::$DATA', 'windows-alias'],
  ['/v1/reports%3A%3A$DATA', 'windows-alias'],
  ['/v1/REPORT~1', 'windows-alias'],
  ['/v1/REPORT~1/x', 'windows-alias'],
  ['/v1/REPORT~1.PDF', 'windows-alias'],
  ['/v1/reports:stream:$DATA', 'windows-alias'],
  ['/v1/or\u0000ders', 'invalid-character'],
  ['/v1/or\tders', 'invalid-character'],
  ['/v1/or ders', 'invalid-character'],
  ['/v1/or\u007fders', 'invalid-character'],
  ['/v1/ordérs', 'invalid-character'],
  ['/v1/orders?x=\u0001', 'invalid-character'],
];

describe('parseRequestTarget', () => {
  for (const [raw, path, search] of accepted) {
    test(`accepts ${JSON.stringify(raw)} as path ${JSON.stringify(path)} and search ${JSON.stringify(search)}`, () => {
      assert.deepEqual(parseRequestTarget(raw), { path, search });
    });
  }

  for (const [raw, reason] of refused) {
    test(`refuses ${JSON.stringify(raw)} with reason ${reason}`, () => {
      assert.throws(
        () => parseRequestTarget(raw),
        (error: unknown) =>
          isPortariaError(error) &&
          error.code === 'invalid-path' &&
          error.status === 400 &&
          error.reason === reason,
      );
    });
  }

  test('returns the path exactly as received, so the token path is reached only verbatim', () => {
    assert.equal(parseRequestTarget(TOKEN_PATH).path, TOKEN_PATH);
    assert.equal(parseRequestTarget(`${TOKEN_PATH}?a=b`).path, TOKEN_PATH);
    assert.notEqual(parseRequestTarget(`${TOKEN_PATH}/`).path, TOKEN_PATH);
    assert.throws(() => parseRequestTarget('/v1/authentication/%61ccesstoken'), /percent-encode/);
    assert.notEqual(parseRequestTarget('/V1/authentication/accesstoken').path, TOKEN_PATH);
  });

  test('public details name the problem, never echo the path', () => {
    try {
      parseRequestTarget('/secret-value/../x');
      assert.fail('expected a refusal');
    } catch (error) {
      assert.ok(isPortariaError(error));
      assert.equal(error.detail, 'The request path must not contain "." or ".." segments.');
    }
  });
});

describe('default-ignorable code points in a path', () => {
  /** The verdict on `raw`: `accepted` or the private reason of the refusal. */
  function verdict(raw: string): string {
    try {
      parseRequestTarget(raw);
      return 'accepted';
    } catch (error) {
      assert.ok(isPortariaError(error) && error.code === 'invalid-path');
      return error.reason;
    }
  }

  test('every assigned one that is not white space or Cf is refused, percent-encoded and raw', () => {
    assert.equal(INVISIBLE_IGNORABLES.length, 265);
    for (const codePoint of INVISIBLE_IGNORABLES) {
      const name = codePointName(codePoint);
      const char = String.fromCodePoint(codePoint);
      assert.equal(
        verdict(`/v1/admin${percentEncoded(codePoint)}/x`),
        'ambiguous-unicode',
        `${name} percent-encoded`,
      );
      // Raw: as a string, and as Node hands raw UTF-8 octets over (one latin1 unit each).
      assert.equal(verdict(`/v1/admin${char}/x`), 'invalid-character', `${name} raw`);
      assert.equal(
        verdict(`/v1/admin${Buffer.from(char).toString('latin1')}/x`),
        'invalid-character',
        `${name} raw octets`,
      );
    }
  });

  const reserved: [string, string][] = [
    ['/v1/admin%E2%81%A5/x', 'U+2065, reserved default-ignorable'],
    ['/v1/admin%EF%BF%B0/x', 'U+FFF0, reserved default-ignorable'],
    ['/v1/admin%F3%A0%80%80/x', 'U+E0000, reserved default-ignorable'],
    ['/v1/admin%F3%A0%BF%BF/x', 'U+E0FFF, reserved default-ignorable'],
  ];
  for (const [raw, name] of reserved) {
    test(`refuses ${raw} (${name}) with reason ambiguous-unicode`, () => {
      assert.equal(verdict(raw), 'ambiguous-unicode');
    });
  }

  test('visible neighbours of the fillers and selectors still pass', () => {
    // U+115E and U+1161 (Hangul jamo), U+17B6 (a Khmer vowel sign), U+1820 (a Mongolian letter).
    for (const raw of ['/v1/%E1%85%9E', '/v1/%E1%85%A1', '/v1/%E1%9E%B6', '/v1/%E1%A0%A0']) {
      assert.equal(verdict(raw), 'accepted', raw);
    }
  });
});
