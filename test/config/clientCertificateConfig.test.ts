/**
 * The `clientCertificate` settings: defaults (the header name follows the format), paths,
 * the environment, and the rules a schema cannot say.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import { loadConfig } from '../../src/config/loadConfig.js';
import { validateConfig } from '../../src/config/validateConfig.js';

const BASE = '/srv/portaria';

function validate(raw: unknown) {
  return validateConfig(raw, { baseDir: BASE });
}

function problemsOf(raw: unknown): readonly string[] {
  try {
    validate(raw);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.problems;
  }
  assert.fail('the configuration was accepted');
}

const behindProxy = (clientCertificate: Record<string, unknown>) => ({
  server: { trustedProxies: ['10.0.0.0/8'] },
  clientCertificate: { source: 'header', ...clientCertificate },
});

describe('clientCertificate settings', () => {
  test('default to no certificate, RFC 9440 and its Client-Cert header', () => {
    assert.deepEqual(validate({}).clientCertificate, {
      source: 'none',
      caFiles: [],
      crlFiles: [],
      header: { format: 'rfc9440', name: 'client-cert' },
    });
  });

  const names: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
    ['xfcc', { format: 'xfcc' }, 'x-forwarded-client-cert'],
    ['nginx', { format: 'nginx' }, 'x-ssl-client-cert'],
    [
      'nginx with ingress-nginx’s name',
      { format: 'nginx', name: 'SSL-Client-Cert' },
      'ssl-client-cert',
    ],
    [
      'rfc9440 with a load balancer’s name',
      { format: 'rfc9440', name: 'X-Client-Cert-Leaf' },
      'x-client-cert-leaf',
    ],
  ];
  for (const [name, header, expected] of names) {
    test(`the header name of ${name} is ${expected}`, () => {
      assert.equal(validate(behindProxy({ header })).clientCertificate.header.name, expected);
    });
  }

  test('CA and CRL files resolve against the configuration’s directory', () => {
    const config = validate(
      behindProxy({ caFiles: ['tls/partners-ca.pem'], crlFiles: ['/etc/crl/partners.crl'] }),
    );
    assert.deepEqual(config.clientCertificate.caFiles, ['/srv/portaria/tls/partners-ca.pem']);
    assert.deepEqual(config.clientCertificate.crlFiles, ['/etc/crl/partners.crl']);
  });

  test('every setting comes from the environment too', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'portaria-certificate-config-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'portaria.yaml');
    await writeFile(file, '');
    const config = await loadConfig({
      file,
      cwd: BASE,
      env: {
        PORTARIA_SERVER__TRUSTED_PROXIES: '127.0.0.1',
        PORTARIA_CLIENT_CERTIFICATE__SOURCE: 'header',
        PORTARIA_CLIENT_CERTIFICATE__CA_FILES: 'ca.pem',
        PORTARIA_CLIENT_CERTIFICATE__HEADER__FORMAT: 'xfcc',
        PORTARIA_CLIENT_CERTIFICATE__HEADER__NAME: 'x-client-cert',
      },
    });
    assert.deepEqual(config.clientCertificate, {
      source: 'header',
      caFiles: [join(dir, 'ca.pem')],
      crlFiles: [],
      header: { format: 'xfcc', name: 'x-client-cert' },
    });
  });

  test('a header without trusted proxies could never be read: refused', () => {
    assert.deepEqual(problemsOf({ clientCertificate: { source: 'header' } }), [
      'clientCertificate.source: header is read only from server.trustedProxies, which is empty (list the TLS-terminating proxy)',
    ]);
  });

  test('CRLs without CA files are refused', () => {
    assert.deepEqual(problemsOf(behindProxy({ crlFiles: ['partners.crl'] })), [
      'clientCertificate.crlFiles: needs clientCertificate.caFiles (the CAs that issued the CRLs)',
    ]);
  });

  const reserved = [
    'Authorization',
    'host',
    'X-Forwarded-For',
    'x-client-id',
    'X-Partner-Id',
    'client-cert-chain',
  ];
  for (const name of reserved) {
    test(`the header may not be ${name}, a header the gateway manages`, () => {
      const raw = {
        ...behindProxy({ header: { name } }),
        identityHeaders: { sub: 'X-Partner-Id' },
      };
      assert.deepEqual(problemsOf(raw), [
        `clientCertificate.header.name: "${name}" is a header the gateway manages`,
      ]);
    });
  }

  test('an unknown source or format, or a name that is no field name, is a schema problem', () => {
    const problems = problemsOf({
      clientCertificate: { source: 'mtls', header: { format: 'haproxy', name: 'x cert' } },
    });
    assert.equal(problems.length, 3);
    assert.match(problems.join('\n'), /clientCertificate\.source/);
    assert.match(problems.join('\n'), /clientCertificate\.header\.format/);
    assert.match(problems.join('\n'), /clientCertificate\.header\.name/);
  });
});
