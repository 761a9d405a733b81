/**
 * `oauth.mtlsBaseUrl` (RFC 8705 §5) and what the RFC 8414 document says of RFC 8705: the
 * setting's rules, the aliases and the tls methods in the metadata, the alias's token
 * endpoint among the default assertion audiences; without a source of client
 * certificates, no tls method and no certificate-bound tokens are advertised.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import { validateConfig } from '../../src/config/validateConfig.js';
import { authorizationServerMetadata } from '../../src/documents/authorizationServerMetadata.js';
import { assertionAudiences } from '../../src/oauth/endpointUrls.js';
import { oauthSettingsOf } from '../../src/oauth/oauthSettings.js';

const BASE = '/srv/portaria';
const WITH_TLS = {
  issuer: 'https://portaria.example',
  server: {
    tls: { enabled: true, certFile: 'tls.crt', keyFile: 'tls.key', clientCertificates: 'request' },
  },
  clientCertificate: { source: 'tls', caFiles: ['ca.pem'] },
};

function problemsOf(raw: unknown): readonly string[] {
  try {
    validateConfig(raw, { baseDir: BASE });
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.problems;
  }
  assert.fail('the configuration was accepted');
}

function metadataOf(raw: Record<string, unknown>): Record<string, unknown> {
  const config = validateConfig(raw, { baseDir: BASE });
  const oauth = oauthSettingsOf(config);
  return authorizationServerMetadata({
    issuer: config.issuer,
    baseUrl: oauth.publicBaseUrl,
    tokenPath: oauth.tokenPath,
    revocationPath: oauth.revocationPath,
    introspectionPath: oauth.introspectionPath,
    jwksPath: '/.well-known/jwks.json',
    authMethods: oauth.authMethods,
    assertionAlgorithms: oauth.assertionAlgorithms,
    certificateBoundTokens: oauth.certificateBoundTokens,
    mtlsBaseUrl: oauth.mtlsBaseUrl,
    scopes: [],
    protectedResources: [],
  });
}

describe('oauth.mtlsBaseUrl', () => {
  const refused: readonly [string, Record<string, unknown>, string][] = [
    [
      'without a source of client certificates',
      { oauth: { mtlsBaseUrl: 'https://mtls.portaria.example' } },
      'oauth.mtlsBaseUrl: needs clientCertificate.source (tls or header)',
    ],
    [
      'over http',
      { ...WITH_TLS, oauth: { mtlsBaseUrl: 'http://mtls.portaria.example' } },
      'oauth.mtlsBaseUrl: must use https:',
    ],
    [
      'with a path',
      { ...WITH_TLS, oauth: { mtlsBaseUrl: 'https://mtls.portaria.example/oauth' } },
      'oauth.mtlsBaseUrl: must be https://host[:port], without a path',
    ],
  ];
  for (const [name, raw, problem] of refused) {
    test(`is refused ${name}`, () => {
      assert.ok(problemsOf(raw).includes(problem), JSON.stringify(problemsOf(raw)));
    });
  }

  test('publishes the aliases, and the alias token endpoint is an assertion audience', () => {
    const raw = { ...WITH_TLS, oauth: { mtlsBaseUrl: 'https://mtls.portaria.example:8443/' } };
    const metadata = metadataOf(raw);
    assert.deepEqual(metadata.mtls_endpoint_aliases, {
      token_endpoint: 'https://mtls.portaria.example:8443/oauth2/token',
      revocation_endpoint: 'https://mtls.portaria.example:8443/oauth2/revoke',
      introspection_endpoint: 'https://mtls.portaria.example:8443/oauth2/introspect',
    });
    assert.equal(metadata.token_endpoint, 'https://portaria.example/oauth2/token');
    assert.equal(metadata.tls_client_certificate_bound_access_tokens, true);
    assert.deepEqual(
      [...assertionAudiences(validateConfig(raw, { baseDir: BASE }))],
      [
        'https://portaria.example/oauth2/token',
        'https://mtls.portaria.example:8443/oauth2/token',
        'https://portaria.example',
      ],
    );
  });
});

describe('RFC 8705 in the metadata', () => {
  test('with client certificates: the tls methods and certificate-bound tokens, no aliases', () => {
    const metadata = metadataOf(WITH_TLS);
    assert.deepEqual(metadata.token_endpoint_auth_methods_supported, [
      'client_secret_basic',
      'client_secret_post',
      'private_key_jwt',
      'tls_client_auth',
      'self_signed_tls_client_auth',
    ]);
    assert.equal(metadata.tls_client_certificate_bound_access_tokens, true);
    assert.equal('mtls_endpoint_aliases' in metadata, false);
  });

  test('without: neither the tls methods nor certificate-bound tokens', () => {
    const metadata = metadataOf({ issuer: 'https://portaria.example' });
    assert.deepEqual(metadata.introspection_endpoint_auth_methods_supported, [
      'client_secret_basic',
      'client_secret_post',
      'private_key_jwt',
    ]);
    assert.equal('tls_client_certificate_bound_access_tokens' in metadata, false);
  });
});
