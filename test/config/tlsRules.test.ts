/**
 * The `server.tls` and `clientCertificate` rules: TLS with its files, its other settings
 * only with TLS on, client certificates asked for only when something reads them and
 * read over TLS only when asked for, CAs to verify against, paths resolved against the
 * configuration's directory, and the issuer's default following the listener.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import { validateConfig } from '../../src/config/validateConfig.js';

const BASE = '/srv/portaria';

const TLS = { enabled: true, certFile: 'tls/server.pem', keyFile: 'tls/server-key.pem' };
const MTLS = { ...TLS, clientCertificates: 'require' };
const FROM_TLS = { source: 'tls', caFiles: ['tls/partners-ca.pem'] };

function problems(settings: Record<string, unknown>): readonly string[] {
  try {
    validateConfig(settings, { baseDir: BASE });
  } catch (error) {
    assert.ok(error instanceof ConfigError, `not a ConfigError: ${String(error)}`);
    return error.problems;
  }
  return [];
}

describe('server.tls and clientCertificate settings', () => {
  test('TLS needs its certificate and key', () => {
    assert.deepEqual(problems({ server: { tls: { enabled: true } } }), [
      'server.tls.certFile: is required with server.tls.enabled (a PEM file)',
      'server.tls.keyFile: is required with server.tls.enabled (a PEM file)',
    ]);
    assert.deepEqual(problems({ server: { tls: TLS } }), []);
  });

  test('every other server.tls setting is a problem while TLS is off, instead of ignored', () => {
    assert.deepEqual(
      problems({
        server: {
          tls: {
            certFile: 'a.pem',
            keyFile: 'a-key.pem',
            minVersion: 'TLSv1.3',
            policy: 'fapi',
            clientCertificates: 'request',
          },
        },
      }),
      [
        'server.tls.certFile: TLS is off; set server.tls.enabled',
        'server.tls.keyFile: TLS is off; set server.tls.enabled',
        'server.tls.minVersion: TLS is off; set server.tls.enabled',
        'server.tls.policy: TLS is off; set server.tls.enabled',
        'server.tls.clientCertificates: TLS is off; set server.tls.enabled',
      ],
    );
  });

  test('the enumerations are checked by the schema, with their values named', () => {
    assert.deepEqual(
      problems({
        server: {
          tls: { ...TLS, minVersion: 'TLSv1.1', policy: 'strict', clientCertificates: true },
        },
        clientCertificate: { source: 'mtls' },
      }),
      [
        'server.tls.minVersion: must be one of "TLSv1.2", "TLSv1.3"',
        'server.tls.policy: must be one of "default", "fapi"',
        'server.tls.clientCertificates: must be one of "off", "request", "require"',
        'clientCertificate.source: must be one of "none", "tls", "header"',
      ],
    );
  });

  test('a handshake that asks for certificates needs source tls, and source tls a handshake that asks', () => {
    assert.deepEqual(
      problems({ server: { tls: MTLS }, clientCertificate: { caFiles: ['ca.pem'] } }),
      [
        'server.tls.clientCertificates: "require" asks partners for certificates nothing reads; set clientCertificate.source: tls',
        'clientCertificate.caFiles: applies only with clientCertificate.source',
      ],
    );
    assert.deepEqual(problems({ server: { tls: TLS }, clientCertificate: FROM_TLS }), [
      'clientCertificate.source: "tls" needs server.tls.clientCertificates: request or require',
    ]);
    assert.deepEqual(problems({ clientCertificate: FROM_TLS }), [
      'clientCertificate.source: "tls" needs server.tls.enabled',
    ]);
    assert.deepEqual(
      problems({
        // A header is read from trusted proxies only (certificateRules.ts): some are listed.
        server: { tls: MTLS, trustedProxies: ['10.0.0.0/8'] },
        clientCertificate: { ...FROM_TLS, source: 'header' },
      }),
      [
        'server.tls.clientCertificates: "require" asks partners for certificates nothing reads; set clientCertificate.source: tls',
      ],
    );
    assert.deepEqual(problems({ server: { tls: MTLS }, clientCertificate: FROM_TLS }), []);
  });

  test('asking for client certificates needs the CAs they chain to; CRLs need their CAs', () => {
    assert.deepEqual(problems({ server: { tls: MTLS }, clientCertificate: { source: 'tls' } }), [
      'clientCertificate.caFiles: the handshake asks for client certificates: list the CA files they must chain to',
    ]);
    assert.deepEqual(
      problems({
        server: { trustedProxies: ['10.0.0.0/8'] },
        clientCertificate: { source: 'header', crlFiles: ['partners.crl.pem'] },
      }),
      [
        'clientCertificate.crlFiles: needs clientCertificate.caFiles (the CAs that issued the CRLs)',
      ],
    );
    assert.deepEqual(
      problems({ clientCertificate: { source: 'none', crlFiles: ['partners.crl.pem'] } }),
      ['clientCertificate.crlFiles: applies only with clientCertificate.source'],
    );
  });

  test('the files resolve against the configuration directory', () => {
    const config = validateConfig(
      {
        server: { tls: MTLS },
        clientCertificate: { ...FROM_TLS, crlFiles: ['/etc/crl/partners.crl.pem'] },
      },
      { baseDir: BASE },
    );
    assert.equal(config.server.tls.certFile, `${BASE}/tls/server.pem`);
    assert.equal(config.server.tls.keyFile, `${BASE}/tls/server-key.pem`);
    assert.deepEqual(config.clientCertificate.caFiles, [`${BASE}/tls/partners-ca.pem`]);
    assert.deepEqual(config.clientCertificate.crlFiles, ['/etc/crl/partners.crl.pem']);
  });

  test('with TLS on and no issuer given, the default issuer is an https: URL', () => {
    assert.equal(validateConfig({}, { baseDir: BASE }).issuer, 'http://localhost:8080');
    assert.equal(
      validateConfig({ server: { tls: TLS } }, { baseDir: BASE }).issuer,
      'https://localhost:8080',
    );
    assert.equal(
      validateConfig({ server: { tls: TLS }, issuer: 'https://api.example' }, { baseDir: BASE })
        .issuer,
      'https://api.example',
    );
  });
});
