/**
 * `profile: fapi-br` in the configuration: what it makes of a valid file (bound tokens on
 * every route, the lifetime clamped) and every contradiction named at once.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import { validateConfig } from '../../src/config/validateConfig.js';

const base = { baseDir: '/' };

/** The smallest file the profile accepts: certificates from a trusted proxy, PS256. */
export const FAPI_SETTINGS = {
  profile: 'fapi-br',
  token: { algorithm: 'PS256' },
  server: { trustedProxies: ['127.0.0.1'] },
  clientCertificate: { source: 'header' },
};

function problemsOf(settings: unknown): readonly string[] {
  try {
    validateConfig(settings, base);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.problems;
  }
  assert.fail('expected a ConfigError');
}

describe('profile fapi-br in the configuration', () => {
  test('defaults to none, which changes nothing', () => {
    const config = validateConfig(
      { routes: [{ id: 'a', prefix: '/a', upstream: 'http://u' }] },
      base,
    );
    assert.equal(config.profile, 'none');
    assert.equal(config.token.lifetimeSeconds, 3600);
    assert.equal(config.routes[0]?.requireCertificateBound, false);
  });

  test('makes every route and the default upstream take bound tokens only', () => {
    const config = validateConfig(
      {
        ...FAPI_SETTINGS,
        routes: [
          { id: 'a', prefix: '/a', upstream: 'http://u' },
          { id: 'b', prefix: '/b', upstream: 'http://u', requireCertificateBound: true },
        ],
        upstream: { default: { upstream: 'http://u' } },
      },
      base,
    );
    assert.deepEqual(
      config.routes.map((r) => r.requireCertificateBound),
      [true, true],
    );
    assert.equal(config.upstream.default?.requireCertificateBound, true);
  });

  test('clamps the default token lifetime (3600) to 900 s and keeps a written one inside', () => {
    assert.equal(validateConfig(FAPI_SETTINGS, base).token.lifetimeSeconds, 900);
    const written = { ...FAPI_SETTINGS, token: { algorithm: 'PS256', lifetimeSeconds: 300 } };
    assert.equal(validateConfig(written, base).token.lifetimeSeconds, 300);
  });

  test('names every contradiction at once, each by its setting', () => {
    const problems = problemsOf({
      profile: 'fapi-br',
      token: { lifetimeSeconds: 3600 },
      server: {
        tls: { enabled: true, certFile: 'c.pem', keyFile: 'k.pem' },
      },
      routes: [
        { id: 'a', prefix: '/a', upstream: 'http://u' },
        { id: 'b', prefix: '/b', upstream: 'http://u', requireCertificateBound: false },
      ],
      upstream: { default: { upstream: 'http://u', requireCertificateBound: false } },
      issuers: [
        { id: 'idp', issuer: 'https://idp', jwksUri: 'https://idp/jwks', audiences: ['x'] },
        {
          id: 'ps',
          issuer: 'https://ps',
          jwksUri: 'https://ps/jwks',
          audiences: ['x'],
          algorithms: ['PS256'],
        },
      ],
    });
    const settings = problems.map((p) => p.slice(0, p.indexOf(':')));
    assert.deepEqual(settings.sort(), [
      'clientCertificate.source',
      'issuers[0].algorithms',
      'routes[1].requireCertificateBound',
      'server.tls.policy',
      'token.algorithm',
      'token.lifetimeSeconds',
      'upstream.default.requireCertificateBound',
    ]);
    assert.ok(problems.every((p) => p.includes('under profile fapi-br')));
    assert.ok(
      problems.includes(
        'issuers[0].algorithms: must be [PS256] under profile fapi-br (allows "ES256", "RS256", the default)',
      ),
    );
  });

  test('reports its contradictions beside the schema problems of the same file', () => {
    const problems = problemsOf({ ...FAPI_SETTINGS, token: { algorithm: 'ES256' }, port: 1 });
    assert.deepEqual(problems, [
      'port: unknown setting',
      'token.algorithm: must be PS256 under profile fapi-br (is "ES256")',
    ]);
  });

  test('refuses an unknown profile', () => {
    assert.deepEqual(problemsOf({ profile: 'fapi' }), [
      'profile: must be one of "none", "fapi-br", "fapi2"',
    ]);
  });
});
