import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildClientRegistry } from '../../src/clients/clientRegistry.js';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { ConfigError } from '../../src/config/configError.js';

const HASH = hashGeneratedSecret('secret-0123456789abcdefghijklmnopqrstuvwxyz');

function problemsOf(clients: unknown[]): string[] {
  try {
    buildClientRegistry({ clients }, 'test');
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
}

describe('OAuth client fields', () => {
  test('a client with secrets defaults to both secret methods, ES256, no audiences list, no permissions', () => {
    const registry = buildClientRegistry(
      { clients: [{ id: 'acme', secrets: [{ hash: HASH }], scopes: ['a'] }] },
      'test',
    );
    const client = registry.get('acme');
    assert.deepEqual(client?.authMethods, ['client_secret_basic', 'client_secret_post']);
    assert.equal(client?.assertionAlg, 'ES256');
    assert.equal(client?.audiences, null);
    assert.deepEqual(client?.permissions, []);
    assert.equal(client?.jwksFile, null);
    assert.equal(client?.jwksUri, null);
  });

  test('a private_key_jwt client may have no secret, and keeps every field', () => {
    const registry = buildClientRegistry(
      {
        clients: [
          {
            id: 'signer',
            secrets: [],
            scopes: ['a'],
            authMethods: ['private_key_jwt'],
            jwksUri: 'https://partner.test/jwks.json',
            assertionAlg: 'RS256',
            audiences: ['https://api.test/orders', 'partner-api'],
            permissions: ['introspect'],
          },
        ],
      },
      'test',
    );
    const client = registry.get('signer');
    assert.deepEqual(client?.authMethods, ['private_key_jwt']);
    assert.equal(client?.jwksUri, 'https://partner.test/jwks.json');
    assert.equal(client?.assertionAlg, 'RS256');
    assert.deepEqual(client?.audiences, ['https://api.test/orders', 'partner-api']);
    assert.deepEqual(client?.permissions, ['introspect']);
  });

  test('reports every problem with its path', () => {
    assert.deepEqual(
      problemsOf([
        { id: 'a', secrets: [], scopes: ['a'] },
        { id: 'b', secrets: [], scopes: ['a'], authMethods: ['private_key_jwt'] },
        { id: 'c', secrets: [{ hash: HASH }], scopes: ['a'], authMethods: ['basic'] },
        {
          id: 'd',
          secrets: [],
          scopes: ['a'],
          authMethods: ['private_key_jwt', 'client_secret_post'],
          jwksFile: 'k.json',
        },
        { id: 'e', secrets: [{ hash: HASH }], scopes: ['a'], jwksUri: 'http://partner.test/jwks' },
        {
          id: 'f',
          secrets: [{ hash: HASH }],
          scopes: ['a'],
          authMethods: ['private_key_jwt'],
          jwksFile: 'k.json',
          jwksUri: 'https://partner.test/jwks',
          assertionAlg: 'HS256',
          audiences: [],
          permissions: ['admin'],
        },
      ]),
      [
        'clients[0].secrets: must hold 1 or 2 secrets',
        "clients[1]: private_key_jwt needs the client's keys: jwksFile or jwksUri",
        'clients[2].authMethods: must be a non-empty array of client_secret_basic, client_secret_post, private_key_jwt, tls_client_auth, self_signed_tls_client_auth',
        'clients[3].secrets: must hold 1 or 2 secrets',
        'clients[3].authMethods: private_key_jwt, client_secret_post needs a secret, and the client has none',
        'clients[4].jwksUri: must be an https: URL (http: only on a loopback host)',
        'clients[4]: jwksFile and jwksUri are used only with private_key_jwt or self_signed_tls_client_auth in authMethods',
        'clients[5]: jwksFile and jwksUri are exclusive',
        'clients[5].assertionAlg: must be one of ES256, ES384, EdDSA, RS256, PS256',
        'clients[5].audiences: must be an array of 1 to 32 audiences',
        'clients[5].permissions: must be an array of distinct permissions (introspect)',
      ],
    );
  });
});
