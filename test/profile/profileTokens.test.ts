/**
 * The contract's token operation under `profile: fapi-br`, over real mutual TLS: a
 * client whose `authMethods` lists only FAPI methods still takes `{clientId,
 * clientSecret}` there, beside its verified certificate, and gets a token bound to it
 * (RFC 8705 §3.1) for at most 900 s; without a certificate it gets none. The clients
 * file is held to the profile on reload too.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { describe, type TestContext, test } from 'node:test';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { CLIENT_ID, CLIENT_SECRET, type ClientSpec, TOKEN_PATH } from '../helpers/fixture.js';
import { startTlsGateway, type TlsGateway } from '../helpers/tlsGateway.js';
import { accessLineOf } from '../helpers/wait.js';

const FAPI_CLIENT: ClientSpec = {
  id: CLIENT_ID,
  secret: CLIENT_SECRET,
  scopes: ['orders:read'],
  extra: {
    authMethods: ['private_key_jwt'],
    jwksFile: 'partner.jwks.json',
    assertionAlg: 'PS256',
  },
};

function fapiGateway(t: TestContext, clients: ClientSpec[] = [FAPI_CLIENT]): Promise<TlsGateway> {
  return startTlsGateway(t, {
    algorithm: 'PS256',
    clientCertificates: 'request',
    // TLS 1.3 only: the test PKI's server key is P-256, which fapi's TLS 1.2 suites exclude.
    tls: { policy: 'fapi', minVersion: 'TLSv1.3' },
    clients,
    settings: () => ({ profile: 'fapi-br' }),
  });
}

function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString('utf8'));
}

const body = JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });
const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body };

describe('the contract operation under profile fapi-br', () => {
  test('issues a token bound to the verified certificate for a FAPI-methods-only client with a secret', async (t) => {
    const gw = await fapiGateway(t);
    const claims = claimsOf(await gw.tlsToken());
    const thumbprint = createHash('sha256').update(gw.pki.client.der).digest('base64url');
    assert.deepEqual(claims.cnf, { 'x5t#S256': thumbprint });
    // The default lifetime (3600) is clamped to the profile's 900 s.
    assert.equal((claims.exp as number) - (claims.iat as number), 900);
  });

  test('refuses the secret without a certificate: 401, no token', async (t) => {
    const gw = await fapiGateway(t);
    const res = await gw.fetch(TOKEN_PATH, post, null);
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    const problem = (await res.json()) as Record<string, unknown>;
    assert.equal(problem.token_de_acesso, undefined);
    assert.match(String(problem.tipo), /certificate-required$/);
    const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') as string);
    assert.equal(line['portaria.reason'], 'certificate-missing');
  });

  test('a reload of the clients file that contradicts the profile is refused, the old clients kept', async (t) => {
    const gw = await fapiGateway(t);
    const file = gw.config.clients.file;
    const data = JSON.parse(await readFile(file, 'utf8')) as { clients: Record<string, unknown>[] };
    data.clients.push(
      { id: 'plain', secrets: [{ hash: hashGeneratedSecret(CLIENT_SECRET) }], scopes: ['a'] },
      {
        id: 'long',
        secrets: [{ hash: hashGeneratedSecret(CLIENT_SECRET) }],
        scopes: ['a'],
        authMethods: ['private_key_jwt'],
        jwksFile: 'partner.jwks.json',
        assertionAlg: 'PS256',
        lifetimeSeconds: 3600,
      },
    );
    await writeFile(file, JSON.stringify(data));
    await gw.app.reload();
    const failed = gw.logs.find((l) => l.includes('reload failed'));
    assert.ok(failed !== undefined, gw.logs.join('\n'));
    const problems = (JSON.parse(failed) as { problems: string[] }).problems;
    assert.deepEqual(
      problems.map((p) => p.slice(0, p.indexOf(':'))),
      ['clients[1].authMethods', 'clients[2].lifetimeSeconds'],
    );
    // The old registry still answers, and "plain" is not in it.
    assert.ok(claimsOf(await gw.tlsToken()).cnf);
    const plain = await gw.fetch(TOKEN_PATH, {
      ...post,
      body: JSON.stringify({ clientId: 'plain', clientSecret: CLIENT_SECRET }),
    });
    assert.equal(plain.status, 401);
    await plain.arrayBuffer();
  });
});
