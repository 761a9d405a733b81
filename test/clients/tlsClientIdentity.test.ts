/**
 * The clients file's RFC 8705 fields: `tlsClientAuth` (one certificate identity, an RFC
 * 4514 DN parsed at load), the two tls methods in `authMethods`, and the rules between
 * them, the keys and the secrets; every problem reported with its path.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildClientRegistry } from '../../src/clients/clientRegistry.js';
import { parseDistinguishedName } from '../../src/clients/distinguishedName.js';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { tlsClientIdentity } from '../../src/clients/tlsClientIdentity.js';
import { ConfigError } from '../../src/config/configError.js';

function problemsOf(value: unknown): string[] {
  const problems: string[] = [];
  tlsClientIdentity(value, 'tlsClientAuth', problems);
  return problems;
}

function registryProblems(clients: unknown[]): string[] {
  try {
    buildClientRegistry({ clients }, 'test');
    return [];
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return [...error.problems];
  }
}

const SECRET = [{ hash: hashGeneratedSecret('secret-0123456789abcdefghijklmnopqrstuvwxyz') }];

describe('RFC 4514 distinguished names', () => {
  test('are held in ASN.1 order, types as OIDs, values unescaped', () => {
    assert.deepEqual(parseDistinguishedName('CN=a\\,b+UID=7,O=Acme\\20,C=PT'), {
      dn: [
        [{ type: '2.5.4.6', value: 'PT' }],
        [{ type: '2.5.4.10', value: 'Acme ' }],
        [
          { type: '2.5.4.3', value: 'a,b' },
          { type: '0.9.2342.19200300.100.1.1', value: '7' },
        ],
      ],
    });
  });

  const refused: readonly [string, string, RegExp][] = [
    ['empty', '', /is empty/],
    ['only spaces', '   ', /is empty/],
    ['a #hex value', 'CN=#0403616263', /#hex values are not supported/],
    ['an unknown type', 'XYZ=1', /not a known attribute type/],
    ['a value without a type', 'partner', /expects type=value/],
    ['an empty value', 'CN=,O=Acme', /an empty value/],
    ['an unescaped ;', 'CN=a;b', /must be escaped/],
    ['a bad escape', 'CN=a\\qb', /a bad escape/],
    ['escapes that are not UTF-8', 'CN=\\FF', /not UTF-8/],
  ];
  for (const [name, text, problem] of refused) {
    test(`refuse ${name}`, () => {
      const parsed = parseDistinguishedName(text);
      assert.ok('problem' in parsed, JSON.stringify(parsed));
      assert.match(parsed.problem, problem);
    });
  }
});

describe('tlsClientAuth', () => {
  test('takes one identity of each kind', () => {
    for (const value of [
      { subjectDn: 'CN=partner,O=Acme' },
      { sanDns: 'partner.example.com' },
      { sanUri: 'spiffe://example.com/partner' },
      { sanIp: '10.0.0.1' },
      { sanIp: '::1' },
      { sanEmail: 'ops@partner.example' },
    ]) {
      assert.deepEqual(problemsOf(value), [], JSON.stringify(value));
    }
  });

  const refused: readonly [string, unknown, string][] = [
    [
      'a string',
      'CN=partner',
      'tlsClientAuth: must be an object with one of subjectDn, sanDns, sanUri, sanIp, sanEmail',
    ],
    [
      'two identities',
      { sanDns: 'a.example', sanIp: '10.0.0.1' },
      'tlsClientAuth: must hold exactly one of subjectDn, sanDns, sanUri, sanIp, sanEmail',
    ],
    [
      'an unknown kind',
      { subject: 'CN=a' },
      'tlsClientAuth: must hold exactly one of subjectDn, sanDns, sanUri, sanIp, sanEmail',
    ],
    [
      'an empty value',
      { sanDns: '' },
      'tlsClientAuth.sanDns: must be a non-empty string of at most 1024 characters',
    ],
    [
      'a bad DN',
      { subjectDn: 'CN=a;b' },
      'tlsClientAuth.subjectDn: not an RFC 4514 distinguished name: ";" at character 5 must be escaped',
    ],
    ['a bad IP', { sanIp: '10.0.0.256' }, 'tlsClientAuth.sanIp: must be an IPv4 or IPv6 address'],
    ['a relative URI', { sanUri: '/partner' }, 'tlsClientAuth.sanUri: must be an absolute URI'],
    [
      'a DNS name with a space',
      { sanDns: 'a b' },
      'tlsClientAuth.sanDns: must be a DNS name (ASCII; an IDN in its xn-- form)',
    ],
    ['an email without @', { sanEmail: 'ops' }, 'tlsClientAuth.sanEmail: must be an email address'],
  ];
  for (const [name, value, problem] of refused) {
    test(`refuses ${name}`, () => {
      assert.deepEqual(problemsOf(value), [problem]);
    });
  }
});

describe('the tls methods in the clients file', () => {
  test('a client with tls methods only may have no secret, and keeps its identity', () => {
    const registry = buildClientRegistry(
      {
        clients: [
          {
            id: 'pki',
            secrets: [],
            scopes: ['a'],
            authMethods: ['tls_client_auth'],
            tlsClientAuth: { sanDns: 'Partner.Example' },
          },
          {
            id: 'both',
            secrets: [],
            scopes: ['a'],
            authMethods: ['self_signed_tls_client_auth', 'private_key_jwt'],
            jwksFile: 'both.jwks.json',
          },
        ],
      },
      'test',
    );
    assert.deepEqual(registry.get('pki')?.authMethods, ['tls_client_auth']);
    assert.deepEqual(registry.get('pki')?.tlsClientAuth, {
      kind: 'sanDns',
      value: 'partner.example',
    });
    assert.equal(registry.get('both')?.tlsClientAuth, null);
  });

  test('reports every problem with its path', () => {
    assert.deepEqual(
      registryProblems([
        { id: 'a', secrets: [], scopes: ['a'], authMethods: ['tls_client_auth'] },
        {
          id: 'b',
          secrets: SECRET,
          scopes: ['a'],
          tlsClientAuth: { sanDns: 'b.example' },
        },
        { id: 'c', secrets: [], scopes: ['a'], authMethods: ['self_signed_tls_client_auth'] },
        {
          id: 'd',
          secrets: [],
          scopes: ['a'],
          authMethods: ['tls_client_auth', 'client_secret_post'],
          tlsClientAuth: { sanDns: 'd.example' },
        },
        {
          id: 'e',
          secrets: SECRET,
          scopes: ['a'],
          authMethods: ['tls_client_auth'],
          tlsClientAuth: { sanIp: 'nope' },
        },
      ]),
      [
        "clients[0]: tls_client_auth needs the certificate's identity: tlsClientAuth { subjectDn | sanDns | sanUri | sanIp | sanEmail }",
        'clients[1]: tlsClientAuth is used only with tls_client_auth in authMethods',
        "clients[2]: self_signed_tls_client_auth needs the client's keys: jwksFile or jwksUri",
        'clients[3].secrets: must hold 1 or 2 secrets',
        'clients[3].authMethods: tls_client_auth, client_secret_post needs a secret, and the client has none',
        'clients[4].tlsClientAuth.sanIp: must be an IPv4 or IPv6 address',
      ],
    );
  });
});
