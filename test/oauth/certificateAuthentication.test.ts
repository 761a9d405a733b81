/**
 * `authenticateByCertificate` through its interface: real openssl certificates, a real
 * registry, the real client key sets (PEM and JWK Set files on disk), a manual clock for
 * the self-signed certificate's own dates.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  buildClientRegistry,
  type ClientRecord,
  type ClientRegistry,
} from '../../src/clients/clientRegistry.js';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import {
  type CertificateVerdict,
  type ClientCertificate,
  clientCertificate,
} from '../../src/domain/clientCertificate.js';
import { isPortariaError } from '../../src/errors.js';
import { ManualClock } from '../../src/lib/clock.js';
import { authenticateByCertificate } from '../../src/oauth/certificateAuthentication.js';
import { ClientKeys } from '../../src/oauth/clientKeys.js';
import { type IssuedCertificate, selfSigned, TestCa } from '../helpers/certificates.js';
import { certificateJwks, namedClientCertificate } from './mtlsCertificates.js';

const DAY_MS = 86_400_000;

function certificate(issued: IssuedCertificate, verdict: CertificateVerdict): ClientCertificate {
  return clientCertificate(issued.der, 'tls', verdict);
}

function publicKeyPem(issued: IssuedCertificate): string {
  return new X509Certificate(issued.cert).publicKey.export({
    type: 'spki',
    format: 'pem',
  }) as string;
}

describe('authentication by client certificate (RFC 8705 §2)', () => {
  let dir = '';
  let ec: IssuedCertificate;
  let rsa: IssuedCertificate;
  let other: IssuedCertificate;
  let issuedByCa: IssuedCertificate;
  let registry: ClientRegistry;
  let clock: ManualClock;
  let keys: ClientKeys;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'portaria-certauth-'));
    ec = await selfSigned(dir, 'ec-self', { use: 'client' });
    rsa = await selfSigned(dir, 'rsa-self', { use: 'client', keyType: 'rsa' });
    other = await selfSigned(dir, 'other-self', { use: 'client' });
    const ca = await TestCa.create(dir, 'auth-ca');
    issuedByCa = await namedClientCertificate(dir, ca, 'both', {
      subject: '/O=Acme/CN=both',
      altNames: ['DNS:both.example'],
    });
    await writeFile(join(dir, 'ec.pem'), publicKeyPem(ec));
    await writeFile(join(dir, 'rsa.pem'), publicKeyPem(rsa));
    await writeFile(join(dir, 'ec.jwks.json'), await certificateJwks(ec));
    // The right key under a kid that is not its thumbprint: never found.
    const jwk = new X509Certificate(ec.cert).publicKey.export({ format: 'jwk' });
    await writeFile(
      join(dir, 'named.jwks.json'),
      JSON.stringify({ keys: [{ ...jwk, kid: 'my-cert-key' }] }),
    );
    await writeFile(join(dir, 'both.pem'), publicKeyPem(issuedByCa));
    const self = (id: string, jwksFile: string, extra: Record<string, unknown> = {}) => ({
      id,
      secrets: [],
      scopes: ['a'],
      authMethods: ['self_signed_tls_client_auth'],
      jwksFile,
      ...extra,
    });
    registry = buildClientRegistry(
      {
        clients: [
          self('pem', 'ec.pem'),
          self('jwks', 'ec.jwks.json'),
          self('named', 'named.jwks.json'),
          self('rsa', 'rsa.pem', { assertionAlg: 'RS256' }),
          {
            id: 'both',
            secrets: [],
            scopes: ['a'],
            authMethods: ['tls_client_auth', 'self_signed_tls_client_auth'],
            tlsClientAuth: { sanDns: 'both.example' },
            jwksFile: 'both.pem',
          },
          {
            id: 'secret',
            secrets: [{ hash: hashGeneratedSecret('secret-0123456789abcdefghijklmnopqrstuvwxyz') }],
            scopes: ['a'],
          },
        ],
      },
      'test',
    );
    clock = new ManualClock(Date.now());
    keys = new ClientKeys({ clock, baseDir: dir, clockSkewSeconds: 60 });
  });
  after(async () => {
    keys.close();
    await rm(dir, { recursive: true, force: true });
  });

  const run = (id: string, cert: ClientCertificate) =>
    authenticateByCertificate(registry.get(id) as ClientRecord, cert, keys, clock);

  async function refusedWith(promise: Promise<unknown>, reason: string): Promise<void> {
    await assert.rejects(promise, (error: unknown) => {
      assert.ok(isPortariaError(error), String(error));
      assert.equal(error.code, 'invalid-client');
      assert.equal(error.oauth, 'invalid_client');
      assert.equal(error.detail, 'The client credentials were not accepted.');
      assert.equal(error.reason, reason);
      return true;
    });
  }

  test('a self-signed certificate whose key is in a PEM key file: proven, whatever the CA verdict', async () => {
    for (const verdict of ['self-signed', 'untrusted'] as const) {
      const cert = certificate(ec, verdict);
      assert.deepEqual(await run('pem', cert), {
        method: 'self_signed_tls_client_auth',
        proven: cert,
      });
    }
  });

  test('a JWK Set key under its RFC 7638 thumbprint is found; under another kid it is not', async () => {
    const cert = certificate(ec, 'self-signed');
    assert.equal((await run('jwks', cert)).method, 'self_signed_tls_client_auth');
    await refusedWith(run('named', cert), 'certificate-key-mismatch');
  });

  test('an RSA certificate for a client whose keys are RS256', async () => {
    assert.equal(
      (await run('rsa', certificate(rsa, 'self-signed'))).method,
      'self_signed_tls_client_auth',
    );
  });

  test('another key, a revoked certificate, and its own dates by the clock', async () => {
    await refusedWith(run('pem', certificate(other, 'self-signed')), 'certificate-key-mismatch');
    await refusedWith(run('pem', certificate(ec, 'revoked')), 'certificate-revoked');
    const now = clock.now();
    try {
      clock.set(now + 31 * DAY_MS);
      await refusedWith(run('pem', certificate(ec, 'self-signed')), 'certificate-expired');
      clock.set(now - DAY_MS);
      await refusedWith(run('pem', certificate(ec, 'self-signed')), 'certificate-not-yet-valid');
    } finally {
      clock.set(now);
    }
  });

  test('a client allowing both: tls_client_auth for a verified certificate, the key check otherwise', async () => {
    assert.deepEqual(await run('both', certificate(issuedByCa, 'verified')), {
      method: 'tls_client_auth',
      proven: null,
    });
    assert.equal(
      (await run('both', certificate(issuedByCa, 'untrusted'))).method,
      'self_signed_tls_client_auth',
    );
    // Verified but naming another identity: refused, not retried as self-signed.
    await refusedWith(run('both', certificate(ec, 'verified')), 'certificate-identity-mismatch');
  });

  test('a client allowing neither tls method', async () => {
    await refusedWith(run('secret', certificate(ec, 'verified')), 'auth-method-not-allowed');
  });
});
