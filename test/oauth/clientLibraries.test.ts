/**
 * Client libraries nobody here wrote, against the real gateway: `openid-client` (v6) and
 * `oauth4webapi` doing client credentials with client_secret_basic (an id and a secret
 * holding `:`, `%`, `+`, spaces and non-ASCII), client_secret_post and private_key_jwt
 * (ES256 from a JWKS file, RS256 from a jwks_uri), then using the token through a route
 * to the real upstream.
 */
import assert from 'node:assert/strict';
import type { webcrypto } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { decodeJwt, exportJWK, importPKCS8 } from 'jose';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { hashChosenSecret } from '../../src/clients/secretHash.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type ClientSpec,
  DEFAULT_CLIENTS,
  type Gateway,
  startGateway,
} from '../helpers/fixture.js';
import { serve, startJwksServer } from '../helpers/jwksServer.js';
import { newKeyPair } from '../helpers/keyPairs.js';

const ISSUER = 'https://portaria.test';
// Every character RFC 6749 §2.3.1's encoding exists for; written with the clients-file
// tools (an scrypt hash of a chosen secret), as the CLI generates URL-safe secrets only.
const ODD_ID = 'partner: 100% + co é';
const ODD_SECRET = 's3:cr%et + pass wörd';

interface Signer {
  readonly id: string;
  readonly alg: 'ES256' | 'RS256';
  readonly kid: string;
  readonly privateKey: webcrypto.CryptoKey;
  readonly jwk: Record<string, unknown>;
}

async function signer(id: string, alg: 'ES256' | 'RS256'): Promise<Signer> {
  const pair =
    alg === 'ES256'
      ? newKeyPair('ec', { namedCurve: 'P-256' })
      : newKeyPair('rsa', { modulusLength: 2048 });
  const pem = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const kid = `${id}-key`;
  return {
    id,
    alg,
    kid,
    privateKey: (await importPKCS8(pem, alg)) as webcrypto.CryptoKey,
    jwk: { ...(await exportJWK(pair.publicKey)), kid, alg, use: 'sig' },
  };
}

interface Setup {
  gw: Gateway;
  es256: Signer;
  rs256: Signer;
  server: client.ServerMetadata;
}

async function setup(t: TestContext): Promise<Setup> {
  const es256 = await signer('es-signer', 'ES256');
  const rs256 = await signer('rs-signer', 'RS256');
  const jwks = await startJwksServer(t, serve({ keys: [rs256.jwk] }));
  const clients: ClientSpec[] = [
    ...DEFAULT_CLIENTS,
    {
      id: ODD_ID,
      secret: ODD_SECRET,
      hash: await hashChosenSecret(ODD_SECRET),
      scopes: ['orders:read'],
    },
    {
      id: es256.id,
      secret: '',
      scopes: ['orders:read', 'orders:write'],
      extra: { authMethods: ['private_key_jwt'], jwksFile: 'es-signer.jwks.json' },
    },
    {
      id: rs256.id,
      secret: '',
      scopes: ['orders:read'],
      extra: { authMethods: ['private_key_jwt'], jwksUri: jwks.url, assertionAlg: 'RS256' },
    },
  ];
  const gw = await startGateway(t, {
    clients,
    settings: (upstream) => ({
      routes: [{ id: 'orders', prefix: '/v1/orders', upstream, scopes: ['orders:read'] }],
    }),
  });
  await writeFile(join(gw.dir, 'es-signer.jwks.json'), JSON.stringify({ keys: [es256.jwk] }));
  return { gw, es256, rs256, server: { issuer: ISSUER, token_endpoint: `${gw.url}/oauth2/token` } };
}

/** The access token works through the route: the upstream sees the client. */
async function throughRoute(gw: Gateway, token: string, clientId: string): Promise<void> {
  const res = await fetch(`${gw.url}/v1/orders/7`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  assert.equal(
    decodeURIComponent(gw.upstream.received.at(-1)?.headers['x-client-id'] as string),
    clientId,
  );
}

describe('openid-client v6', () => {
  const cases: Record<string, (s: Setup) => [string, client.ClientAuth]> = {
    'client_secret_basic with an odd id and secret': () => [
      ODD_ID,
      client.ClientSecretBasic(ODD_SECRET),
    ],
    client_secret_post: () => [CLIENT_ID, client.ClientSecretPost(CLIENT_SECRET)],
    'private_key_jwt ES256 (JWKS file)': (s) => [
      s.es256.id,
      client.PrivateKeyJwt({ key: s.es256.privateKey, kid: s.es256.kid }),
    ],
    'private_key_jwt RS256 (jwks_uri)': (s) => [
      s.rs256.id,
      client.PrivateKeyJwt({ key: s.rs256.privateKey, kid: s.rs256.kid }),
    ],
  };
  for (const [name, make] of Object.entries(cases)) {
    test(`clientCredentialsGrant with ${name}`, async (t) => {
      const s = await setup(t);
      const [id, auth] = make(s);
      const config = new client.Configuration(s.server, id, undefined, auth);
      client.allowInsecureRequests(config);
      const tokens = await client.clientCredentialsGrant(config, { scope: 'orders:read' });
      assert.equal(tokens.token_type.toLowerCase(), 'bearer');
      assert.equal(tokens.scope, 'orders:read');
      assert.equal(decodeJwt(tokens.access_token).sub, id);
      await throughRoute(s.gw, tokens.access_token, id);
    });
  }

  test('error answers reach the library as RFC 6749 errors (with the Basic challenge on a 401)', async (t) => {
    const s = await setup(t);
    const wrong = new client.Configuration(
      s.server,
      CLIENT_ID,
      undefined,
      client.ClientSecretBasic('wrong'),
    );
    client.allowInsecureRequests(wrong);
    await assert.rejects(client.clientCredentialsGrant(wrong), (err: unknown) => {
      assert.ok(err instanceof client.WWWAuthenticateChallengeError, String(err));
      assert.equal(err.status, 401);
      assert.deepEqual(
        err.cause.map((c) => [c.scheme, c.parameters.realm]),
        [['basic', 'portaria']],
      );
      return true;
    });
    const greedy = new client.Configuration(
      s.server,
      CLIENT_ID,
      undefined,
      client.ClientSecretPost(CLIENT_SECRET),
    );
    client.allowInsecureRequests(greedy);
    await assert.rejects(
      client.clientCredentialsGrant(greedy, { scope: 'orders:read admin' }),
      (err: unknown) => {
        assert.ok(err instanceof client.ResponseBodyError, String(err));
        assert.equal(err.error, 'invalid_scope');
        assert.equal(err.status, 400);
        return true;
      },
    );
  });
});

describe('oauth4webapi', () => {
  const cases: Record<string, (s: Setup) => [string, oauth.ClientAuth]> = {
    'client_secret_basic with an odd id and secret': () => [
      ODD_ID,
      oauth.ClientSecretBasic(ODD_SECRET),
    ],
    client_secret_post: () => [CLIENT_ID, oauth.ClientSecretPost(CLIENT_SECRET)],
    'private_key_jwt ES256 (JWKS file)': (s) => [
      s.es256.id,
      oauth.PrivateKeyJwt({ key: s.es256.privateKey, kid: s.es256.kid }),
    ],
    'private_key_jwt RS256 (jwks_uri)': (s) => [
      s.rs256.id,
      oauth.PrivateKeyJwt({ key: s.rs256.privateKey, kid: s.rs256.kid }),
    ],
  };
  for (const [name, make] of Object.entries(cases)) {
    test(`clientCredentialsGrantRequest with ${name}`, async (t) => {
      const s = await setup(t);
      const [id, auth] = make(s);
      const as = s.server as oauth.AuthorizationServer;
      const c: oauth.Client = { client_id: id };
      const response = await oauth.clientCredentialsGrantRequest(
        as,
        c,
        auth,
        new URLSearchParams(),
        {
          [oauth.allowInsecureRequests]: true,
        },
      );
      const result = await oauth.processClientCredentialsResponse(as, c, response);
      assert.equal(result.token_type, 'bearer');
      assert.ok(typeof result.expires_in === 'number' && result.expires_in > 0);
      assert.equal(decodeJwt(result.access_token).sub, id);
      await throughRoute(s.gw, result.access_token, id);
    });
  }

  test('a replayed private_key_jwt request is refused as invalid_client', async (t) => {
    const s = await setup(t);
    const as = s.server as oauth.AuthorizationServer;
    const c: oauth.Client = { client_id: s.es256.id };
    // Capture the body the library sends, then send it again as it was.
    let sent: string | undefined;
    const capture: typeof fetch = async (input, init) => {
      sent = String(init?.body);
      return fetch(input, init);
    };
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      c,
      oauth.PrivateKeyJwt({ key: s.es256.privateKey, kid: s.es256.kid }),
      new URLSearchParams(),
      { [oauth.allowInsecureRequests]: true, [oauth.customFetch]: capture },
    );
    await oauth.processClientCredentialsResponse(as, c, response);
    const replay = await fetch(`${s.gw.url}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: sent,
    });
    assert.equal(replay.status, 401);
    assert.equal(((await replay.json()) as { error: string }).error, 'invalid_client');
  });
});
