import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { oauthErrorJson, PortariaError } from '../../src/errors.js';
import { basicChallenge } from '../../src/http/challenge.js';
import { NO_STORE } from '../../src/http/replies.js';
import {
  decodeFormComponent,
  isFormMediaType,
  parseForm,
  readFormBody,
} from '../../src/oauth/formBody.js';
import { OAuthError } from '../../src/oauth/oauthError.js';

function refusedWith(error: string, reason: string) {
  return (err: unknown) =>
    err instanceof OAuthError && err.error === error && err.reason === reason;
}

describe('parseForm', () => {
  test('reads one value per name, + as space and %XX as UTF-8 bytes', () => {
    const form = parseForm('grant_type=client_credentials&scope=a+b%3Ac&client_id=%C3%A9t%C3%A9');
    assert.deepEqual(
      [...form],
      [
        ['grant_type', 'client_credentials'],
        ['scope', 'a b:c'],
        ['client_id', 'été'],
      ],
    );
  });

  test('treats a parameter without a value as omitted (RFC 6749 §3.1)', () => {
    assert.deepEqual([...parseForm('scope=&grant_type=x&&resource')], [['grant_type', 'x']]);
  });

  const repeated = {
    'the same name twice': 'grant_type=client_credentials&grant_type=client_credentials',
    'a name once plain and once encoded': 'scope=a&%73cope=b',
    'client_secret twice': 'client_id=a&client_secret=x&client_secret=y',
  };
  for (const [name, body] of Object.entries(repeated)) {
    test(`refuses ${name} with invalid_request`, () => {
      assert.throws(() => parseForm(body), refusedWith('invalid_request', 'form-repeated'));
    });
  }

  test('refuses a repeated resource with invalid_target (one audience per token)', () => {
    assert.throws(
      () => parseForm('resource=https%3A%2F%2Fa.test&resource=https%3A%2F%2Fb.test'),
      refusedWith('invalid_target', 'several-resources'),
    );
  });

  const malformed = {
    'a lone %': 'scope=a%',
    'one hex digit': 'scope=%4',
    'non-hex digits': 'scope=%zz',
    'an encoded invalid UTF-8 byte': 'scope=%FF',
    'a truncated UTF-8 sequence': 'client_id=%C3',
    'an encoded lone surrogate': 'client_id=%ED%A0%80',
  };
  for (const [name, body] of Object.entries(malformed)) {
    test(`refuses ${name} with invalid_request`, () => {
      assert.throws(() => parseForm(body), refusedWith('invalid_request', 'form-malformed'));
    });
  }

  test('the description names the repeated parameter, never a value', () => {
    try {
      parseForm('client_secret=s3cr3t&client_secret=other');
      assert.fail('accepted');
    } catch (error) {
      const body = oauthErrorJson(error as OAuthError);
      assert.match(body, /client_secret/);
      assert.doesNotMatch(body, /s3cr3t|other/);
    }
  });
});

describe('decodeFormComponent', () => {
  test('decodes what RFC 6749 §2.3.1 encodes: : % + space and non-ASCII', () => {
    assert.equal(decodeFormComponent('a%3Ab%25c%2Bd+e%C3%A7'), 'a:b%c+d eç');
  });
});

describe('isFormMediaType', () => {
  const cases: Record<string, boolean> = {
    'application/x-www-form-urlencoded': true,
    'Application/X-WWW-Form-Urlencoded; charset=UTF-8': true,
    'application/x-www-form-urlencoded;charset="utf-8"': true,
    'application/x-www-form-urlencoded; charset=iso-8859-1': false,
    'application/x-www-form-urlencoded; boundary=x': false,
    'application/json': false,
    'multipart/form-data': false,
  };
  for (const [header, expected] of Object.entries(cases)) {
    test(`${header} → ${expected}`, () => assert.equal(isFormMediaType(header), expected));
  }
  test('no Content-Type → false', () => assert.equal(isFormMediaType(undefined), false));
});

describe('readFormBody', () => {
  test('refuses another media type with 415 before reading the body', async () => {
    let read = false;
    await assert.rejects(
      readFormBody({
        contentType: 'application/json',
        readBody: () => {
          read = true;
          return Promise.resolve('{}');
        },
      }),
      (err: unknown) => err instanceof PortariaError && err.status === 415,
    );
    assert.equal(read, false);
  });

  test('a body that is not UTF-8 is a malformed form (invalid_request)', async () => {
    await assert.rejects(
      readFormBody({
        contentType: 'application/x-www-form-urlencoded',
        readBody: () =>
          Promise.reject(
            new PortariaError('invalid-request', 'not UTF-8', { reason: 'body-not-utf8' }),
          ),
      }),
      refusedWith('invalid_request', 'form-malformed'),
    );
  });

  test('passes the body reader’s 413 through', async () => {
    const tooLarge = new PortariaError('payload-too-large', 'too large', {
      reason: 'body-too-large',
    });
    await assert.rejects(
      readFormBody({
        contentType: 'application/x-www-form-urlencoded',
        readBody: () => Promise.reject(tooLarge),
      }),
      (err: unknown) => err === tooLarge,
    );
  });
});

describe('OAuthError', () => {
  test('has the RFC 6749 §5.2 shape, no-store, and the Basic challenge only on a 401 for Basic', () => {
    const plain = new OAuthError('invalid_client', 'No.', { reason: 'bad-secret' });
    assert.equal(plain.status, 401);
    assert.deepEqual(JSON.parse(oauthErrorJson(plain)), {
      error: 'invalid_client',
      error_description: 'No.',
    });
    assert.deepEqual(NO_STORE, { 'cache-control': 'no-store', pragma: 'no-cache' });
    assert.equal(basicChallenge(plain, undefined), undefined);
    assert.equal(basicChallenge(plain, 'Basic eDp5'), 'Basic realm="portaria"');
    const scope = new OAuthError('invalid_scope', 'No.', { reason: 'scope-not-granted' });
    assert.equal(scope.status, 400);
    assert.equal(basicChallenge(scope, 'Basic eDp5'), undefined);
    assert.equal(
      new OAuthError('invalid_target', 'x', { reason: 'resource-not-allowed' }).status,
      400,
    );
  });
});
