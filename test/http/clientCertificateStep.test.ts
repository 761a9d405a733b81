/**
 * The certificate opening step over real TLS connections: an HTTPS server asking for a
 * client certificate (and enforcing nothing, as the gateway's listener does) runs the
 * step on each real request and records the scope it filled, or the refusal.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import { Agent, request } from 'undici';
import { parseRequestTarget } from '../../src/domain/requestPath.js';
import { PortariaError } from '../../src/errors.js';
import {
  clientCertificateStep,
  type OpenDocumentPath,
} from '../../src/http/clientCertificateStep.js';
import { RequestScope } from '../../src/http/requestScope.js';
import { PeerCertificates } from '../../src/tls/peerCertificate.js';
import { createTestPki, type IssuedCertificate, type TestPki } from '../helpers/certificates.js';

type Outcome = { verdict: string | null; thumbprint: string | null } | { refused: string };

/** An HTTPS server whose handler runs the step; `visit` requests `path` presenting `client`. */
async function stepServer(
  t: TestContext,
  pki: TestPki,
  required: OpenDocumentPath | null,
): Promise<(path: string, client: IssuedCertificate | null) => Promise<Outcome>> {
  const step = clientCertificateStep(new PeerCertificates(), required);
  const outcomes: Outcome[] = [];
  const server = createServer(
    {
      cert: pki.server.cert,
      key: pki.server.key,
      ca: [pki.ca.pem],
      requestCert: true,
      rejectUnauthorized: false,
    },
    (req: IncomingMessage, res) => {
      const scope = new RequestScope();
      scope.target = parseRequestTarget(req.url ?? '');
      try {
        step(req, scope);
        outcomes.push({
          verdict: scope.certificate?.verdict ?? null,
          thumbprint: scope.certificate?.thumbprint ?? null,
        });
      } catch (error) {
        assert.ok(error instanceof PortariaError);
        outcomes.push({ refused: `${error.code}/${error.reason}` });
      }
      res.end();
    },
  );
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const origin = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  const agents = new Map<IssuedCertificate | null, Agent>();
  t.after(() => Promise.all([...agents.values()].map((a) => a.destroy())));
  return async (path, client) => {
    let agent = agents.get(client);
    if (agent === undefined) {
      agent = new Agent({
        connect: {
          ca: pki.ca.pem,
          ...(client === null ? {} : { cert: client.cert, key: client.key }),
        },
      });
      agents.set(client, agent);
    }
    const res = await request(`${origin}${path}`, { dispatcher: agent });
    await res.body.arrayBuffer();
    return outcomes.at(-1) as Outcome;
  };
}

describe('the client certificate opening step', () => {
  let pki: TestPki;
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'portaria-pki-'));
    pki = await createTestPki(dir);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('request mode: each verdict reaches the scope, none is refused, no certificate is null', async (t) => {
    const visit = await stepServer(t, pki, null);
    const cases: [IssuedCertificate | null, string | null][] = [
      [pki.client, 'verified'],
      [pki.expiredClient, 'expired'],
      [pki.notYetValidClient, 'not-yet-valid'],
      [pki.wrongCaClient, 'untrusted'],
      [pki.selfSignedClient, 'self-signed'],
      [null, null],
    ];
    for (const [client, verdict] of cases) {
      const outcome = await visit('/v1/orders', client);
      assert.deepEqual(
        'verdict' in outcome ? outcome.verdict : outcome,
        verdict,
        client?.name ?? 'no certificate',
      );
    }
  });

  test('request mode: keep-alive requests of one connection share the one certificate', async (t) => {
    const visit = await stepServer(t, pki, null);
    const first = await visit('/a', pki.client);
    const second = await visit('/b', pki.client);
    assert.deepEqual(first, second);
    assert.ok('thumbprint' in first && first.thumbprint !== null);
  });

  test('require mode: refused with the verdict as reason, except on the open documents', async (t) => {
    const visit = await stepServer(t, pki, (path) => path === '/.well-known/jwks.json');
    const admitted = await visit('/v1/orders', pki.client);
    assert.equal('verdict' in admitted && admitted.verdict, 'verified');
    const refusals: [IssuedCertificate | null, string][] = [
      [null, 'certificate-required/certificate-missing'],
      [pki.expiredClient, 'certificate-invalid/certificate-expired'],
      [pki.notYetValidClient, 'certificate-invalid/certificate-not-yet-valid'],
      [pki.wrongCaClient, 'certificate-invalid/certificate-untrusted'],
      [pki.selfSignedClient, 'certificate-invalid/certificate-self-signed'],
    ];
    for (const [client, refused] of refusals) {
      assert.deepEqual(await visit('/v1/orders', client), { refused }, client?.name);
      const open = await visit('/.well-known/jwks.json', client);
      assert.ok('verdict' in open, `${client?.name ?? 'none'} on the JWKS`);
    }
  });
});
