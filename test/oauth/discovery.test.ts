/**
 * RFC 8414 authorization server metadata on the public port: what it says, where it is
 * served, that it comes from the settings (never the Host header), and that stock client
 * libraries discover the gateway from it.
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { type Gateway, startGateway } from '../helpers/fixture.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { headerOf, onlyResponse } from '../helpers/rawResponse.js';
import { gatewayFetch, PUBLIC_ORIGIN } from './publicOrigin.js';

const METADATA_PATH = '/.well-known/oauth-authorization-server';

function start(t: TestContext, extra: Record<string, unknown> = {}): Promise<Gateway> {
  return startGateway(t, {
    settings: (upstream) => ({
      routes: [
        { id: 'orders', prefix: '/v1/orders', upstream, scopes: ['orders:read'] },
        { id: 'reports', prefix: '/v1/reports', upstream, scopes: ['reports:read', 'orders:read'] },
      ],
      ...extra,
    }),
  });
}

describe('authorization server metadata (RFC 8414)', () => {
  test('names the issuer of our tokens and absolute endpoint URLs from the settings', async (t) => {
    const gw = await start(t);
    const res = await fetch(gw.url + METADATA_PATH);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.headers.get('cache-control'), 'public, max-age=300');
    const methods = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'];
    const algorithms = ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256'];
    assert.deepEqual(await res.json(), {
      issuer: 'https://portaria.test',
      token_endpoint: 'https://portaria.test/oauth2/token',
      jwks_uri: 'https://portaria.test/.well-known/jwks.json',
      scopes_supported: ['orders:read', 'reports:read'],
      response_types_supported: [],
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: methods,
      token_endpoint_auth_signing_alg_values_supported: algorithms,
      revocation_endpoint: 'https://portaria.test/oauth2/revoke',
      revocation_endpoint_auth_methods_supported: methods,
      revocation_endpoint_auth_signing_alg_values_supported: algorithms,
      introspection_endpoint: 'https://portaria.test/oauth2/introspect',
      introspection_endpoint_auth_methods_supported: methods,
      introspection_endpoint_auth_signing_alg_values_supported: algorithms,
      protected_resources: [
        'https://portaria.test',
        'https://portaria.test/v1/orders',
        'https://portaria.test/v1/reports',
      ],
    });
    // RFC 8414 §3.3: the document's issuer is the `iss` of the tokens.
    assert.equal(decodeJwt(await gw.token()).iss, 'https://portaria.test');
  });

  test('is the same whatever Host the request names', async (t) => {
    const gw = await start(t);
    const raw = await rawRequest(
      gw.url,
      `GET ${METADATA_PATH} HTTP/1.1\r\nHost: attacker.example\r\nX-Forwarded-Host: attacker.example\r\nConnection: close\r\n\r\n`,
    );
    const response = onlyResponse(raw);
    assert.equal(response.status, 200);
    assert.doesNotMatch(response.body, /attacker/);
    assert.equal(JSON.parse(response.body).token_endpoint, 'https://portaria.test/oauth2/token');
    assert.ok(headerOf(response, 'x-request-id'));
  });

  test('answers GET and HEAD only: other methods get 405 with Allow, upgrades are refused', async (t) => {
    const gw = await start(t);
    const head = await fetch(gw.url + METADATA_PATH, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), '');
    const post = await fetch(gw.url + METADATA_PATH, { method: 'POST', body: '{}' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
    await post.arrayBuffer();
    const upgrade = onlyResponse(
      await rawRequest(
        gw.url,
        `GET ${METADATA_PATH} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
          'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
      ),
    );
    assert.equal(upgrade.status, 400);
    assert.equal(gw.upstream.received.length, 0);
  });

  test('an issuer with a path is discovered at the path RFC 8414 §3.1 derives from it', async (t) => {
    const gw = await start(t, { issuer: 'https://portaria.test/tenant-a' });
    const res = await fetch(`${gw.url}${METADATA_PATH}/tenant-a`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal(body.issuer, 'https://portaria.test/tenant-a');
    // Endpoints and resources hang off the issuer, path included.
    assert.equal(body.token_endpoint, 'https://portaria.test/tenant-a/oauth2/token');
    // The bare well-known path is then no document: a protected path like any other.
    const bare = await fetch(gw.url + METADATA_PATH);
    assert.equal(bare.status, 401);
    await bare.arrayBuffer();
    const as = await oauth.processDiscoveryResponse(
      new URL('https://portaria.test/tenant-a'),
      await oauth.discoveryRequest(new URL('https://portaria.test/tenant-a'), {
        algorithm: 'oauth2',
        [oauth.customFetch]: gatewayFetch(gw),
      }),
    );
    assert.equal(as.issuer, 'https://portaria.test/tenant-a');
    // The resources hang off it as well, their documents where RFC 9728 §3.1 puts them.
    const resource = new URL('https://portaria.test/tenant-a/v1/orders');
    const metadata = await oauth.processResourceDiscoveryResponse(
      resource,
      await oauth.resourceDiscoveryRequest(resource, { [oauth.customFetch]: gatewayFetch(gw) }),
    );
    assert.deepEqual(metadata.scopes_supported, ['orders:read']);
    const challenge = await fetch(`${gw.url}/v1/orders/1`);
    assert.equal(
      challenge.headers.get('www-authenticate'),
      'Bearer realm="portaria", resource_metadata="https://portaria.test/.well-known/oauth-protected-resource/tenant-a/v1/orders"',
    );
    await challenge.arrayBuffer();
  });

  test('oauth4webapi discovers the gateway (discoveryRequest, processDiscoveryResponse)', async (t) => {
    const gw = await start(t);
    const issuer = new URL(PUBLIC_ORIGIN);
    const response = await oauth.discoveryRequest(issuer, {
      algorithm: 'oauth2',
      [oauth.customFetch]: gatewayFetch(gw),
    });
    const as = await oauth.processDiscoveryResponse(issuer, response);
    assert.equal(as.issuer, 'https://portaria.test');
    assert.equal(as.token_endpoint, 'https://portaria.test/oauth2/token');
    assert.equal(as.introspection_endpoint, 'https://portaria.test/oauth2/introspect');
    assert.equal(as.revocation_endpoint, 'https://portaria.test/oauth2/revoke');
  });

  test('openid-client discovers the gateway with the OAuth 2.0 algorithm', async (t) => {
    const gw = await start(t);
    const config = await client.discovery(
      new URL(PUBLIC_ORIGIN),
      'acme',
      undefined,
      client.ClientSecretBasic('secret'),
      { algorithm: 'oauth2', [client.customFetch]: gatewayFetch(gw) },
    );
    const metadata = config.serverMetadata();
    assert.equal(metadata.issuer, 'https://portaria.test');
    assert.equal(metadata.token_endpoint, 'https://portaria.test/oauth2/token');
    assert.deepEqual(metadata.grant_types_supported, ['client_credentials']);
    assert.ok(metadata.supportsPKCE() === false);
  });
});

describe('with oauth.enabled false', () => {
  test('no documents, challenges as before, no OAuth operations in the OpenAPI description', async (t) => {
    const gw = await start(t, { oauth: { enabled: false } });
    for (const path of [
      METADATA_PATH,
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-protected-resource/v1/orders',
      '/oauth2/revoke',
      '/oauth2/introspect',
    ]) {
      const res = await fetch(gw.url + path);
      assert.equal(res.status, 401, path);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="portaria"');
      await res.arrayBuffer();
    }
    const openapi = (await (await fetch(`${gw.url}/v1/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    assert.deepEqual(Object.keys(openapi.paths), [
      '/v1/authentication/accesstoken',
      '/.well-known/jwks.json',
      '/v1/openapi.json',
    ]);
  });
});
