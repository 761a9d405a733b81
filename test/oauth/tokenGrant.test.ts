import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildClientRegistry, type ClientRecord } from '../../src/clients/clientRegistry.js';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { OAuthError } from '../../src/oauth/oauthError.js';
import { checkGrantType, grantFor } from '../../src/oauth/tokenGrant.js';

const HASH = hashGeneratedSecret('secret-0123456789abcdefghijklmnopqrstuvwxyz');
const registry = buildClientRegistry(
  {
    clients: [
      { id: 'plain', secrets: [{ hash: HASH }], scopes: ['a', 'b', 'c'] },
      {
        id: 'multi',
        secrets: [{ hash: HASH }],
        scopes: ['a'],
        audiences: ['https://api.test/orders', 'https://api.test/stock?v=1'],
      },
    ],
  },
  'test',
);
const plain = registry.get('plain') as ClientRecord;
const multi = registry.get('multi') as ClientRecord;

function refused(error: string, reason: string) {
  return (err: unknown) =>
    err instanceof OAuthError && err.error === error && err.reason === reason;
}

describe('checkGrantType', () => {
  test('accepts client_credentials', () => {
    checkGrantType(new Map([['grant_type', 'client_credentials']]));
  });
  test('refuses a missing grant_type with invalid_request', () => {
    assert.throws(
      () => checkGrantType(new Map()),
      refused('invalid_request', 'grant-type-missing'),
    );
  });
  for (const grant of [
    'password',
    'authorization_code',
    'Client_Credentials',
    'urn:ietf:params:oauth:grant-type:jwt-bearer',
  ]) {
    test(`refuses ${grant} with unsupported_grant_type`, () => {
      assert.throws(
        () => checkGrantType(new Map([['grant_type', grant]])),
        refused('unsupported_grant_type', 'grant-type-unsupported'),
      );
    });
  }
});

describe('grantFor', () => {
  test('without scope or resource: every scope, the gateway audience', () => {
    assert.deepEqual(grantFor(plain, new Map(), 'partner-api'), {
      scope: 'a b c',
      audience: 'partner-api',
    });
  });
  test('a subset of the client’s scopes narrows the token, in the client’s order', () => {
    assert.equal(grantFor(plain, new Map([['scope', 'c a a']]), 'x').scope, 'a c');
  });
  const escalations = {
    'a scope the client lacks': 'a admin',
    'a double space': 'a  b',
    'a malformed token': 'a "b"',
    'a tab': 'a\tb',
  };
  for (const [name, scope] of Object.entries(escalations)) {
    test(`refuses ${name} with invalid_scope`, () => {
      assert.throws(
        () => grantFor(plain, new Map([['scope', scope]]), 'x'),
        refused('invalid_scope', 'scope-not-granted'),
      );
    });
  }
  test('resource selects the audience among the client’s, the first by default', () => {
    assert.equal(grantFor(multi, new Map(), 'partner-api').audience, 'https://api.test/orders');
    assert.equal(
      grantFor(multi, new Map([['resource', 'https://api.test/stock?v=1']]), 'x').audience,
      'https://api.test/stock?v=1',
    );
  });
  const targets: Record<string, [string, string]> = {
    'an audience the client may not ask for': ['https://api.test/admin', 'resource-not-allowed'],
    'the gateway audience for a client with its own list': [
      'https://api.test/orders/',
      'resource-not-allowed',
    ],
    'a relative reference': ['/orders', 'resource-malformed'],
    'a fragment': ['https://api.test/orders#x', 'resource-malformed'],
    'a bare word': ['partner-api', 'resource-malformed'],
  };
  for (const [name, [resource, reason]] of Object.entries(targets)) {
    test(`refuses ${name} with invalid_target`, () => {
      assert.throws(
        () => grantFor(multi, new Map([['resource', resource]]), 'partner-api'),
        refused('invalid_target', reason),
      );
    });
  }
});
