/**
 * `PeerCertificates`: a TLS connection's client certificate with OpenSSL's verdict, read
 * once per connection, over real handshakes with openssl-made certificates (a server
 * that asks for a certificate and enforces nothing, as the gateway's listener does).
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import { connect, createServer, type TLSSocket } from 'node:tls';
import type { ClientCertificate } from '../../src/domain/clientCertificate.js';
import { certificateThumbprint } from '../../src/domain/clientCertificate.js';
import { PeerCertificates, verdictOf } from '../../src/tls/peerCertificate.js';
import {
  createTestPki,
  type IssuedCertificate,
  TestCa,
  type TestPki,
} from '../helpers/certificates.js';

interface Seen {
  readonly certificate: ClientCertificate | null;
  readonly again: ClientCertificate | null;
  readonly resumed: boolean;
  readonly authorized: boolean;
}

/**
 * A TLS server reading each connection's certificate twice with `certificates`; the
 * returned function connects with `client` (and `session`) and gives what it read.
 */
async function server(
  t: TestContext,
  pki: TestPki,
  certificates: PeerCertificates,
  trust: string | { ca?: string[]; crl?: string[] } = {},
): Promise<
  (
    client: IssuedCertificate | null,
    session?: Buffer,
  ) => Promise<Seen & { session: Buffer | undefined }>
> {
  const seen: Seen[] = [];
  const tls = createServer(
    {
      cert: pki.server.cert,
      key: pki.server.key,
      ca: [pki.ca.pem],
      ...(typeof trust === 'string' ? { crl: trust } : trust),
      requestCert: true,
      rejectUnauthorized: false,
    },
    (socket: TLSSocket) => {
      seen.push({
        certificate: certificates.of(socket),
        again: certificates.of(socket),
        resumed: socket.isSessionReused(),
        authorized: socket.authorized,
      });
      socket.end('done');
    },
  );
  tls.listen(0, '127.0.0.1');
  await new Promise((resolve) => tls.once('listening', resolve));
  t.after(() => new Promise<void>((resolve) => tls.close(() => resolve())));
  const port = (tls.address() as { port: number }).port;
  return (client, session) =>
    new Promise((resolve, reject) => {
      let ticket: Buffer | undefined;
      const socket = connect({
        host: '127.0.0.1',
        port,
        ca: pki.ca.pem,
        ...(client === null ? {} : { cert: client.cert, key: client.key }),
        ...(session === undefined ? {} : { session }),
      });
      socket.on('session', (s: Buffer) => {
        ticket = s;
      });
      socket.on('error', reject);
      socket.resume();
      socket.on('close', () => {
        const last = seen.at(-1);
        if (last === undefined) reject(new Error('the server saw no connection'));
        else resolve({ ...last, session: ticket });
      });
    });
}

describe('PeerCertificates', () => {
  let pki: TestPki;
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'portaria-pki-'));
    pki = await createTestPki(dir);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('a certificate the trusted CA issued is verified, with its DER and x5t#S256', async (t) => {
    const visit = await server(t, pki, new PeerCertificates());
    const { certificate } = await visit(pki.client);
    assert.equal(certificate?.verdict, 'verified');
    assert.equal(certificate?.source, 'tls');
    assert.deepEqual(certificate?.der, pki.client.der);
    assert.equal(certificate?.thumbprint, certificateThumbprint(pki.client.der));
    assert.equal(certificate?.x509.subject, new X509Certificate(pki.client.cert).subject);
  });

  const cases: readonly [string, (pki: TestPki) => IssuedCertificate, string][] = [
    ['expired', (p) => p.expiredClient, 'expired'],
    ['not yet valid', (p) => p.notYetValidClient, 'not-yet-valid'],
    ['issued by a CA not trusted', (p) => p.wrongCaClient, 'untrusted'],
    ['self-signed', (p) => p.selfSignedClient, 'self-signed'],
  ];
  for (const [name, pick, verdict] of cases) {
    test(`a certificate ${name} is kept with the verdict ${verdict}, and told once`, async (t) => {
      const told: [string, string][] = [];
      const visit = await server(t, pki, new PeerCertificates((v, code) => told.push([v, code])));
      const { certificate } = await visit(pick(pki));
      assert.equal(certificate?.verdict, verdict);
      assert.deepEqual(certificate?.der, pick(pki).der);
      assert.equal(told.length, 1);
      assert.equal(told[0]?.[0], verdict);
      assert.match(told[0]?.[1] ?? '', /^[A-Z_]+$/);
    });
  }

  test('with the CA’s CRL, a revoked certificate is revoked and another one still verified', async (t) => {
    const crl = await readFile(pki.crlFile, 'utf8');
    const visit = await server(t, pki, new PeerCertificates(), crl);
    assert.equal((await visit(pki.revokedClient)).certificate?.verdict, 'revoked');
    assert.equal((await visit(pki.client)).certificate?.verdict, 'verified');
  });

  test('with CRLs every CA of a chain needs one: an intermediate CA’s partner is verified only with both CRLs', async (t) => {
    const intermediate = await TestCa.create(pki.dir, 'intermediate-ca', pki.ca);
    const partner = await intermediate.issue('intermediate-partner', { use: 'client' });
    const chained = { ...partner, cert: partner.cert + intermediate.pem };
    const rootCrl = await readFile(pki.crlFile, 'utf8');
    const intermediateCrl = await readFile(await intermediate.crl(), 'utf8');
    const withCas = (crl: string[]) => ({ ca: [pki.ca.pem, intermediate.pem], crl });
    const verdicts: [string, string | undefined][] = [];
    for (const [name, crl] of [
      ['both', [rootCrl, intermediateCrl]],
      ['root only', [rootCrl]],
      ['intermediate only', [intermediateCrl]],
    ] as const) {
      const visit = await server(t, pki, new PeerCertificates(), withCas([...crl]));
      verdicts.push([name, (await visit(chained)).certificate?.verdict]);
    }
    assert.deepEqual(verdicts, [
      ['both', 'verified'],
      ['root only', 'untrusted'],
      ['intermediate only', 'untrusted'],
    ]);
  });

  test('a CRL past its next update makes every certificate of its CA untrusted', async (t) => {
    const day = 86_400_000;
    const stale = await pki.ca.crl({
      lastUpdate: new Date(Date.now() - 3 * day),
      nextUpdate: new Date(Date.now() - day),
      file: join(pki.dir, 'stale.crl.pem'),
    });
    const told: string[] = [];
    const visit = await server(t, pki, new PeerCertificates((_verdict, code) => told.push(code)), {
      crl: [await readFile(stale, 'utf8')],
    });
    assert.equal((await visit(pki.client)).certificate?.verdict, 'untrusted');
    assert.deepEqual(told, ['CRL_HAS_EXPIRED']);
  });

  test('no certificate is null, also on a resumed session, where Node 20 reports it authorized', async (t) => {
    const visit = await server(t, pki, new PeerCertificates());
    const first = await visit(null);
    assert.equal(first.certificate, null);
    assert.equal(first.authorized, false);
    const resumed = await visit(null, first.session);
    assert.equal(resumed.resumed, true);
    // Node 20 says `authorized` here (the reason the reader never trusts that flag);
    // the Node 24 CI runs reports false. Either way: no certificate.
    assert.equal(resumed.certificate, null);
  });

  test('a resumed session keeps its certificate and verdict', async (t) => {
    const visit = await server(t, pki, new PeerCertificates());
    const first = await visit(pki.expiredClient);
    const resumed = await visit(pki.expiredClient, first.session);
    assert.equal(resumed.resumed, true);
    assert.equal(resumed.certificate?.verdict, 'expired');
    assert.deepEqual(resumed.certificate?.der, pki.expiredClient.der);
  });

  test('a connection’s certificate is read once: every later lookup is the same object', async (t) => {
    const visit = await server(t, pki, new PeerCertificates());
    const seen = await visit(pki.client);
    assert.ok(seen.certificate !== null);
    assert.equal(seen.again, seen.certificate);
  });

  test('verdictOf: OpenSSL codes with a verdict of their own, and any other untrusted', () => {
    assert.equal(verdictOf(true, null), 'verified');
    assert.equal(verdictOf(false, 'CERT_HAS_EXPIRED'), 'expired');
    assert.equal(verdictOf(false, 'CERT_NOT_YET_VALID'), 'not-yet-valid');
    assert.equal(verdictOf(false, 'CERT_REVOKED'), 'revoked');
    assert.equal(verdictOf(false, 'DEPTH_ZERO_SELF_SIGNED_CERT'), 'self-signed');
    assert.equal(verdictOf(false, 'SELF_SIGNED_CERT_IN_CHAIN'), 'self-signed');
    for (const code of [
      'UNABLE_TO_GET_CRL',
      'CRL_HAS_EXPIRED',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    ]) {
      assert.equal(verdictOf(false, code), 'untrusted', code);
    }
    assert.equal(
      verdictOf(false, Object.assign(new Error('x'), { code: 'CERT_REVOKED' })),
      'revoked',
    );
    assert.equal(verdictOf(false, undefined), 'untrusted');
  });
});
