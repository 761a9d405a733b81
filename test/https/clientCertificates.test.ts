/**
 * Client certificates over TLS as partners see them (`clientCertificate.source: tls`):
 * in `require` mode every verdict reaches the request and is refused with its own reason
 * as an HTTP answer (never a reset), on every path but the open documents, WebSocket
 * upgrades included; in `request` mode nothing is refused; curl with `--cert`.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { WebSocket } from 'ws';
import { createTestPki, type IssuedCertificate, type TestPki } from '../helpers/certificates.js';
import { CLIENT_ID, CLIENT_SECRET, TOKEN_PATH } from '../helpers/fixture.js';
import { sample, scrape } from '../helpers/metrics.js';
import { runToEnd, testEnv } from '../helpers/process.js';
import { startTlsGateway } from '../helpers/tlsGateway.js';
import { accessLineOf, parsedLogs } from '../helpers/wait.js';

const TOKEN_BODY = JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });

describe('client certificates over TLS', () => {
  let pki: TestPki;
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'portaria-pki-'));
    pki = await createTestPki(dir);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  describe('require mode', () => {
    // With CRLs configured OpenSSL reports the last of its errors: a self-signed
    // certificate's issuer (itself) has no CRL, so it is untrusted then.
    const refusals: readonly [
      string,
      (p: TestPki) => IssuedCertificate | null,
      string,
      string,
      RegExp,
      boolean?,
    ][] = [
      ['no certificate', () => null, 'certificate-required', 'certificate-missing', /is required/],
      [
        'an expired one',
        (p) => p.expiredClient,
        'certificate-invalid',
        'certificate-expired',
        /has expired/,
      ],
      [
        'one not valid yet',
        (p) => p.notYetValidClient,
        'certificate-invalid',
        'certificate-not-yet-valid',
        /not valid yet/,
      ],
      [
        'one from a CA not trusted',
        (p) => p.wrongCaClient,
        'certificate-invalid',
        'certificate-untrusted',
        /trusted authority/,
      ],
      [
        'a self-signed one',
        (p) => p.selfSignedClient,
        'certificate-invalid',
        'certificate-self-signed',
        /self-signed/,
        false,
      ],
      [
        'a self-signed one, with CRLs',
        (p) => p.selfSignedClient,
        'certificate-invalid',
        'certificate-untrusted',
        /trusted authority/,
      ],
      [
        'a revoked one',
        (p) => p.revokedClient,
        'certificate-invalid',
        'certificate-revoked',
        /revoked/,
      ],
    ];
    for (const [name, pick, code, reason, detail, crls = true] of refusals) {
      test(`${name}: 401 ${code} as problem details, without a challenge, reason ${reason} logged and counted`, async (t) => {
        const gw = await startTlsGateway(t, {
          pki,
          clientCertificates: 'require',
          clientCertificate: crls ? { crlFiles: [pki.crlFile] } : {},
        });
        const token = await gw.tlsToken();
        const res = await gw.fetch(
          '/v1/orders/1',
          { headers: { authorization: `Bearer ${token}` } },
          pick(pki),
        );
        assert.equal(res.status, 401);
        assert.equal(res.headers.get('content-type'), 'application/problem+json');
        assert.equal(res.headers.get('www-authenticate'), null);
        assert.equal(res.headers.get('cache-control'), 'no-store');
        const body = (await res.json()) as Record<string, unknown>;
        assert.equal(body.tipo, `urn:portaria:problem:${code}`);
        assert.equal(body.status, 401);
        assert.match(String(body.detalhe), detail);
        assert.equal(gw.upstream.received.length, 0);
        const line = await accessLineOf(gw.logs, String(res.headers.get('x-request-id')));
        assert.equal(line['portaria.reason'], reason);
        const metrics = await scrape(gw.adminUrl);
        assert.equal(sample(metrics, `portaria_auth_failures_total{reason="${reason}"}`), 1);
      });
    }

    test('a verified certificate is forwarded; the token operation and OAuth endpoints need one too, the documents do not', async (t) => {
      const gw = await startTlsGateway(t, { pki, clientCertificates: 'require' });
      const token = await gw.tlsToken();
      const forwarded = await gw.fetch('/v1/orders/1', {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(forwarded.status, 200);
      await forwarded.arrayBuffer();
      const post = {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: TOKEN_BODY,
      };
      const noCertificate = await gw.fetch(TOKEN_PATH, post, null);
      assert.equal(noCertificate.status, 401);
      assert.equal(
        ((await noCertificate.json()) as Record<string, unknown>).tipo,
        'urn:portaria:problem:certificate-required',
      );
      const oauth = await gw.fetch(
        '/oauth2/token',
        {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'grant_type=client_credentials',
        },
        pki.wrongCaClient,
      );
      assert.equal(oauth.status, 401);
      assert.equal(
        ((await oauth.json()) as Record<string, unknown>).tipo,
        'urn:portaria:problem:certificate-invalid',
      );
      for (const path of [
        '/.well-known/jwks.json',
        '/v1/openapi.json',
        '/.well-known/oauth-authorization-server',
        '/.well-known/oauth-protected-resource',
      ]) {
        const res = await gw.fetch(path, {}, null);
        assert.equal(res.status, 200, path);
        await res.arrayBuffer();
      }
    });

    test('a refused request with a body gets its answer, not a reset', async (t) => {
      const gw = await startTlsGateway(t, { pki, clientCertificates: 'require' });
      const res = await gw.fetch(
        '/v1/orders',
        { method: 'POST', body: Buffer.alloc(256 * 1024, 'x') },
        pki.expiredClient,
      );
      assert.equal(res.status, 401);
      await res.arrayBuffer();
    });

    test('a WebSocket upgrade without a verified certificate is refused with its reason', async (t) => {
      const gw = await startTlsGateway(t, { pki, clientCertificates: 'require' });
      const token = await gw.tlsToken();
      const ws = new WebSocket(`${gw.url.replace('https:', 'wss:')}/v1/live`, {
        ca: pki.ca.pem,
        cert: pki.expiredClient.cert,
        key: pki.expiredClient.key,
        headers: { authorization: `Bearer ${token}` },
      });
      ws.on('error', () => {});
      t.after(() => ws.terminate());
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        ws.on('open', () => reject(new Error('unexpectedly upgraded')));
        ws.on('unexpected-response', (_req, res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (chunk: string) => {
            body += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
      });
      assert.equal(answer.status, 401);
      assert.equal(
        (JSON.parse(answer.body) as Record<string, unknown>).tipo,
        'urn:portaria:problem:certificate-invalid',
      );
    });

    test('curl: --cert with the partner certificate is served, without it refused with the reason', async (t) => {
      const gw = await startTlsGateway(t, { pki, clientCertificates: 'require' });
      const curl = (extra: string[]) =>
        runToEnd(
          'curl',
          [
            '-sS',
            '--cacert',
            pki.ca.certFile,
            ...extra,
            '-H',
            'content-type: application/json',
            '--data-binary',
            TOKEN_BODY,
            `${gw.url}${TOKEN_PATH}`,
          ],
          { env: testEnv(), timeoutMs: 10_000 },
        );
      const served = await curl(['--cert', pki.client.certFile, '--key', pki.client.keyFile]);
      assert.equal(served.code, 0, served.stderr);
      assert.ok((JSON.parse(served.stdout) as Record<string, unknown>).token_de_acesso);
      const refused = await curl([]);
      assert.equal(refused.code, 0, refused.stderr);
      assert.equal(
        (JSON.parse(refused.stdout) as Record<string, unknown>).tipo,
        'urn:portaria:problem:certificate-required',
      );
    });
  });

  describe('request mode', () => {
    test('nothing is refused for its certificate; an unverified one is logged once per connection', async (t) => {
      // Long enough for undici to keep the connection between two requests.
      const gw = await startTlsGateway(t, {
        pki,
        clientCertificates: 'request',
        settings: () => ({ server: { keepAliveTimeoutMs: 10_000 } }),
      });
      // Asked without a certificate: a bearer token (one asked with `pki.client` would be
      // bound to it, and pass with that certificate only: certificateBoundTokens.test.ts).
      const issued = await gw.fetch(
        '/v1/authentication/accesstoken',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
        },
        null,
      );
      const token = ((await issued.json()) as { token_de_acesso: string }).token_de_acesso;
      for (const client of [null, pki.expiredClient, pki.expiredClient, pki.wrongCaClient]) {
        const res = await gw.fetch(
          '/v1/orders/1',
          { headers: { authorization: `Bearer ${token}` } },
          client,
        );
        assert.equal(res.status, 200, client?.name ?? 'none');
        await res.arrayBuffer();
      }
      const told = parsedLogs(gw.logs)
        .filter((l) => l.msg === 'client certificate not verified')
        .map((l) => [l.verdict, l.opensslError]);
      // The expired client's two requests went over one keep-alive connection.
      assert.deepEqual(told, [
        ['expired', 'CERT_HAS_EXPIRED'],
        ['untrusted', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'],
      ]);
    });
  });
});
