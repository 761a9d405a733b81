/**
 * `namesIdentity` through its interface: real certificates made by openssl (subjects with
 * escapes, multi-valued RDNs and UTF-8; every SAN type), identities parsed as the clients
 * file's loader parses them.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type TlsClientIdentity, tlsClientIdentity } from '../../src/clients/tlsClientIdentity.js';
import { type ClientCertificate, clientCertificate } from '../../src/domain/clientCertificate.js';
import { namesIdentity } from '../../src/oauth/certificateNames.js';
import { TestCa } from '../helpers/certificates.js';
import { namedClientCertificate } from './mtlsCertificates.js';

function identity(value: Record<string, string>): TlsClientIdentity {
  const problems: string[] = [];
  const parsed = tlsClientIdentity(value, 'tlsClientAuth', problems);
  assert.deepEqual(problems, []);
  return parsed as TlsClientIdentity;
}

describe('a certificate names a registered identity', () => {
  let dir = '';
  let plain: ClientCertificate;
  let multi: ClientCertificate;
  let utf8: ClientCertificate;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'portaria-names-'));
    const ca = await TestCa.create(dir, 'names-ca');
    const make = async (file: string, subject: string, altNames?: string[]) => {
      const issued = await namedClientCertificate(dir, ca, file, {
        subject,
        ...(altNames === undefined ? {} : { altNames }),
      });
      return clientCertificate(issued.der, 'tls', 'verified');
    };
    plain = await make('plain', '/C=PT/O=Acme, Lda/CN=partner', [
      'DNS:Partner.Example.com',
      'URI:spiffe://example.com/ns/prod/sa/partner',
      'IP:10.0.0.1',
      'IP:2001:db8::1',
      'email:ops@partner.example',
    ]);
    multi = await make('multi', '/O=Acme/CN=svc+UID=42');
    utf8 = await make('utf8', '/O=Açme/CN=é');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const subjects: readonly [string, () => ClientCertificate, string, boolean][] = [
    ['the RFC 4514 string (last RDN first)', () => plain, 'CN=partner,O=Acme\\, Lda,C=PT', true],
    ['types in another case', () => plain, 'cn=partner,o=Acme\\, Lda,c=PT', true],
    ['spaces around the separators', () => plain, 'CN=partner, O = Acme\\, Lda , C=PT', true],
    ['a dotted OID for a type', () => plain, '2.5.4.3=partner,O=Acme\\2C Lda,C=PT', true],
    ['the RDNs in ASN.1 order', () => plain, 'C=PT,O=Acme\\, Lda,CN=partner', false],
    ['a value in another case', () => plain, 'CN=Partner,O=Acme\\, Lda,C=PT', false],
    ['one RDN short', () => plain, 'CN=partner,O=Acme\\, Lda', false],
    ['one RDN more', () => plain, 'CN=partner,OU=ops,O=Acme\\, Lda,C=PT', false],
    ['a multi-valued RDN in either order', () => multi, 'UID=42+CN=svc,O=Acme', true],
    ['a multi-valued RDN as one of its values', () => multi, 'CN=svc,O=Acme', false],
    ['UTF-8 values', () => utf8, 'CN=é,O=Açme', true],
    ['UTF-8 written as escaped hex pairs', () => utf8, 'CN=\\C3\\A9,O=A\\C3\\A7me', true],
  ];
  for (const [name, certificate, subjectDn, matches] of subjects) {
    test(`subjectDn, ${name}: ${matches ? 'matches' : 'does not match'}`, () => {
      assert.equal(namesIdentity(certificate(), identity({ subjectDn })), matches);
    });
  }

  const sans: readonly [string, Record<string, string>, boolean][] = [
    ['a DNS name in another case', { sanDns: 'partner.example.COM' }, true],
    ['another DNS name', { sanDns: 'other.example.com' }, false],
    ['the URI', { sanUri: 'spiffe://example.com/ns/prod/sa/partner' }, true],
    ['the URI in another case', { sanUri: 'spiffe://example.com/ns/prod/sa/Partner' }, false],
    ['the IPv4 address', { sanIp: '10.0.0.1' }, true],
    ['another IPv4 address', { sanIp: '10.0.0.2' }, false],
    ['the IPv6 address written in full', { sanIp: '2001:0db8:0:0:0:0:0:1' }, true],
    ['the email address', { sanEmail: 'ops@partner.example' }, true],
    ['the email address in another case', { sanEmail: 'Ops@partner.example' }, false],
    ['the subject CN as a DNS name', { sanDns: 'partner' }, false],
  ];
  for (const [name, value, matches] of sans) {
    test(`SAN, ${name}: ${matches ? 'matches' : 'does not match'}`, () => {
      assert.equal(namesIdentity(plain, identity(value)), matches);
    });
  }

  test('a certificate without SANs names no SAN identity', () => {
    assert.equal(namesIdentity(multi, identity({ sanDns: 'svc' })), false);
    assert.equal(namesIdentity(multi, identity({ sanIp: '10.0.0.1' })), false);
  });
});
