/**
 * The journey of a partner and a resource server using client libraries nobody here
 * wrote (openid-client 6, oauth4webapi 3): discover the gateway from its metadata, get a
 * token, introspect it, revoke it with the libraries' own functions, see it inactive and
 * refused through a route. Every request goes to `https://portaria.test`, the gateway's
 * published origin (`publicOrigin.ts`).
 */
import assert from 'node:assert/strict';
import { webcrypto } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { CLIENT_ID, CLIENT_SECRET, type Gateway, startGateway } from '../helpers/fixture.js';
import { CLIENTS, RESOURCE_SERVER, statusThroughRoute } from './formRequests.js';
import { gatewayFetch, PUBLIC_ORIGIN } from './publicOrigin.js';

const issuer = new URL(PUBLIC_ORIGIN);

function start(t: TestContext, more: typeof CLIENTS = []): Promise<Gateway> {
  return startGateway(t, { clients: [...CLIENTS, ...more] });
}

describe('revocation and introspection through stock client libraries', () => {
  test('openid-client: discovery, client credentials, tokenIntrospection, tokenRevocation', async (t) => {
    const gw = await start(t);
    const options = { algorithm: 'oauth2', [client.customFetch]: gatewayFetch(gw) } as const;
    const partner = await client.discovery(
      issuer,
      CLIENT_ID,
      undefined,
      client.ClientSecretBasic(CLIENT_SECRET),
      options,
    );
    const resourceServer = await client.discovery(
      issuer,
      RESOURCE_SERVER.id,
      undefined,
      client.ClientSecretPost(RESOURCE_SERVER.secret),
      options,
    );
    const { access_token: token } = await client.clientCredentialsGrant(partner, {
      scope: 'orders:read',
    });
    assert.equal(await statusThroughRoute(gw, token), 200);

    const active = await client.tokenIntrospection(resourceServer, token);
    assert.equal(active.active, true);
    assert.equal(active.client_id, CLIENT_ID);
    assert.equal(active.scope, 'orders:read');
    assert.equal(active.iss, PUBLIC_ORIGIN);

    await client.tokenRevocation(partner, token);
    assert.deepEqual(
      { ...(await client.tokenIntrospection(resourceServer, token)) },
      {
        active: false,
      },
    );
    assert.equal(await statusThroughRoute(gw, token), 401);
  });

  test('oauth4webapi: discoveryRequest, introspectionRequest, revocationRequest, private_key_jwt', async (t) => {
    // The resource server authenticates with a key of its own (private_key_jwt, ES256).
    const keyDir = await mkdtemp(join(tmpdir(), 'portaria-rs-key-'));
    t.after(() => rm(keyDir, { recursive: true, force: true }));
    const { privateKey, publicKey } = (await webcrypto.subtle.generateKey(
      { name: 'ECDSA', namedCurve: 'P-256' },
      true,
      ['sign', 'verify'],
    )) as webcrypto.CryptoKeyPair;
    const jwk = { ...(await webcrypto.subtle.exportKey('jwk', publicKey)), kid: 'rs-1' };
    const jwksFile = join(keyDir, 'jwks.json');
    await writeFile(jwksFile, JSON.stringify({ keys: [jwk] }));
    const gw = await start(t, [
      {
        id: 'reports-api',
        secret: '',
        scopes: ['introspection'],
        extra: {
          authMethods: ['private_key_jwt'],
          jwksFile,
          assertionAlg: 'ES256',
          permissions: ['introspect'],
        },
      },
    ]);
    const fetchOptions = { [oauth.customFetch]: gatewayFetch(gw) };
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...fetchOptions }),
    );
    const partner: oauth.Client = { client_id: CLIENT_ID };
    const partnerAuth = oauth.ClientSecretPost(CLIENT_SECRET);
    const granted = await oauth.processClientCredentialsResponse(
      as,
      partner,
      await oauth.clientCredentialsGrantRequest(as, partner, partnerAuth, {}, fetchOptions),
    );
    const token = granted.access_token;

    const resourceServer: oauth.Client = { client_id: 'reports-api' };
    const rsAuth = oauth.PrivateKeyJwt({ key: privateKey, kid: 'rs-1' });
    const introspect = async () =>
      oauth.processIntrospectionResponse(
        as,
        resourceServer,
        await oauth.introspectionRequest(as, resourceServer, rsAuth, token, fetchOptions),
      );
    const active = await introspect();
    assert.equal(active.active, true);
    assert.equal(active.sub, CLIENT_ID);
    assert.equal(active.token_type, 'Bearer');

    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, partner, partnerAuth, token, fetchOptions),
    );
    // A fresh assertion each time (its jti is single-use): inactive now.
    assert.equal((await introspect()).active, false);
    assert.equal(await statusThroughRoute(gw, token), 401);
  });
});

describe('PS256 access tokens through stock client libraries', () => {
  test('openid-client obtains one; oauth4webapi validateJwtAccessToken accepts it from the metadata and JWKS (RFC 9068)', async (t) => {
    const gw = await startGateway(t, { clients: CLIENTS, algorithm: 'PS256' });
    const partner = await client.discovery(
      issuer,
      CLIENT_ID,
      undefined,
      client.ClientSecretBasic(CLIENT_SECRET),
      { algorithm: 'oauth2', [client.customFetch]: gatewayFetch(gw) },
    );
    const { access_token: token } = await client.clientCredentialsGrant(partner, {
      scope: 'orders:read',
    });

    // A resource server checking the token itself, with the keys the metadata points at.
    const fetchOptions = { [oauth.customFetch]: gatewayFetch(gw) };
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...fetchOptions }),
    );
    const request = new Request(`${PUBLIC_ORIGIN}/v1/orders/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const validate = (signingAlgorithms: string[]) =>
      oauth.validateJwtAccessToken(as, request, gw.config.audience, {
        signingAlgorithms,
        ...fetchOptions,
      });
    const claims = await validate(['PS256']);
    assert.equal(claims.client_id, CLIENT_ID);
    assert.equal(claims.scope, 'orders:read');
    // The library checks the algorithm: one that expects RS256 refuses the token.
    await assert.rejects(validate(['RS256']));
    assert.equal(await statusThroughRoute(gw, token), 200);
  });
});
