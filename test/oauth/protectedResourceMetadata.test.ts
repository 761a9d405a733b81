/**
 * RFC 9728 protected-resource metadata: one document for the gateway and one per route,
 * rebuilt when the routes reload, and `resource_metadata` in every Bearer challenge of the
 * edge (401 and 403, HTTP and WebSocket upgrades) beside the parameters it had.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { describe, type TestContext, test } from 'node:test';
import * as oauth from 'oauth4webapi';
import { type Gateway, startGateway } from '../helpers/fixture.js';
import { ecKey, jwksOf, serve, startJwksServer } from '../helpers/jwksServer.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { headerOf, onlyResponse } from '../helpers/rawResponse.js';
import { signWithGatewayKey, validClaims } from '../helpers/tokens.js';
import { waitFor } from '../helpers/wait.js';
import { gatewayFetch } from './publicOrigin.js';

const WELL_KNOWN = '/.well-known/oauth-protected-resource';
const ROOT_METADATA = `https://portaria.test${WELL_KNOWN}`;
const ORDERS_METADATA = `https://portaria.test${WELL_KNOWN}/v1/orders`;

function routesFor(upstream: string) {
  return [
    {
      id: 'orders',
      prefix: '/v1/orders',
      upstream,
      scopes: ['orders:read'],
      audience: 'https://portaria.test/v1/orders',
    },
    { id: 'reports', prefix: '/v1/reports', upstream, scopes: ['reports:read'] },
  ];
}

async function start(t: TestContext, configFile = false): Promise<Gateway> {
  const jwks = await startJwksServer(t, serve(jwksOf(ecKey('k1'))));
  return startGateway(t, {
    configFile,
    settings: (upstream) => ({
      routes: routesFor(upstream),
      upstream: { default: null },
      issuers: [
        {
          id: 'partner',
          issuer: 'https://idp.partner.test',
          jwksUri: jwks.url,
          audiences: ['partner-api'],
        },
        {
          id: 'legacy',
          issuer: 'legacy-idp',
          jwksUri: jwks.url,
          audiences: ['partner-api'],
        },
      ],
      reload: { enabled: false },
    }),
  });
}

async function documentAt(gw: Gateway, path: string): Promise<Record<string, unknown>> {
  const res = await fetch(gw.url + path);
  assert.equal(res.status, 200, path);
  assert.equal(res.headers.get('cache-control'), 'public, max-age=300');
  return (await res.json()) as Record<string, unknown>;
}

function challengeOf(res: Response): string {
  return res.headers.get('www-authenticate') ?? '';
}

describe('protected-resource metadata (RFC 9728)', () => {
  test('describes the gateway and each route: resource, issuers, scopes, header only', async (t) => {
    const gw = await start(t);
    const servers = ['https://portaria.test', 'https://idp.partner.test'];
    assert.deepEqual(await documentAt(gw, WELL_KNOWN), {
      resource: 'https://portaria.test',
      authorization_servers: servers,
      scopes_supported: ['orders:read', 'reports:read'],
      bearer_methods_supported: ['header'],
    });
    assert.deepEqual(await documentAt(gw, `${WELL_KNOWN}/v1/orders`), {
      resource: 'https://portaria.test/v1/orders',
      authorization_servers: servers,
      scopes_supported: ['orders:read'],
      bearer_methods_supported: ['header'],
    });
    assert.deepEqual((await documentAt(gw, `${WELL_KNOWN}/v1/reports`)).scopes_supported, [
      'reports:read',
    ]);
    // A path below a route is no resource identifier of ours: a protected path.
    const below = await fetch(`${gw.url}${WELL_KNOWN}/v1/orders/1`);
    assert.equal(below.status, 401);
    await below.arrayBuffer();
  });

  test('oauth4webapi reads a route document for its resource identifier', async (t) => {
    const gw = await start(t);
    const resource = new URL('https://portaria.test/v1/orders');
    const response = await oauth.resourceDiscoveryRequest(resource, {
      [oauth.customFetch]: gatewayFetch(gw),
    });
    const metadata = await oauth.processResourceDiscoveryResponse(resource, response);
    assert.deepEqual(metadata.authorization_servers, [
      'https://portaria.test',
      'https://idp.partner.test',
    ]);
    assert.deepEqual(metadata.scopes_supported, ['orders:read']);
  });

  test('a 401 names the document of the route serving the path, or the gateway', async (t) => {
    const gw = await start(t);
    const missing = await fetch(`${gw.url}/v1/orders/1`);
    assert.equal(missing.status, 401);
    assert.equal(
      challengeOf(missing),
      `Bearer realm="portaria", resource_metadata="${ORDERS_METADATA}"`,
    );
    const invalid = await fetch(`${gw.url}/elsewhere`, {
      headers: { authorization: 'Bearer not-a-token' },
    });
    assert.equal(
      challengeOf(invalid),
      `Bearer realm="portaria", error="invalid_token", resource_metadata="${ROOT_METADATA}"`,
    );
    // A token for another resource (the route's audience is missing).
    const token = await gw.token();
    const wrongAudience = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(wrongAudience.status, 401);
    assert.equal(
      challengeOf(wrongAudience),
      `Bearer realm="portaria", error="invalid_token", resource_metadata="${ORDERS_METADATA}"`,
    );
  });

  test('a 403 keeps its scope and names the route document', async (t) => {
    const gw = await start(t);
    const token = await signWithGatewayKey(gw, validClaims(gw, { scope: 'orders:read' }));
    const res = await fetch(`${gw.url}/v1/reports/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 403);
    assert.equal(
      challengeOf(res),
      'Bearer realm="portaria", error="insufficient_scope", scope="reports:read", ' +
        `resource_metadata="https://portaria.test${WELL_KNOWN}/v1/reports"`,
    );
  });

  test('oauth4webapi finds resource_metadata in the challenge and follows it', async (t) => {
    const gw = await start(t);
    const token = await gw.token();
    const error = await oauth
      .protectedResourceRequest(
        token,
        'GET',
        new URL('https://portaria.test/v1/orders/7'),
        new Headers(),
        null,
        {
          [oauth.customFetch]: gatewayFetch(gw),
        },
      )
      .then(
        () => assert.fail('expected a challenge'),
        (e: unknown) => e,
      );
    assert.ok(error instanceof oauth.WWWAuthenticateChallengeError);
    const [challenge] = error.cause;
    assert.equal(challenge?.scheme, 'bearer');
    assert.equal(challenge?.parameters.error, 'invalid_token');
    assert.equal(challenge?.parameters.resource_metadata, ORDERS_METADATA);
    const resource = new URL('https://portaria.test/v1/orders');
    const metadata = await oauth.processResourceDiscoveryResponse(
      resource,
      await gatewayFetch(gw)(challenge?.parameters.resource_metadata as string),
    );
    assert.equal(metadata.resource, 'https://portaria.test/v1/orders');
  });

  test('a refused WebSocket upgrade carries the parameter too', async (t) => {
    const gw = await start(t);
    const response = onlyResponse(
      await rawRequest(
        gw.url,
        'GET /v1/orders/live HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
          'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
      ),
    );
    assert.equal(response.status, 401);
    assert.equal(
      headerOf(response, 'www-authenticate'),
      `Bearer realm="portaria", resource_metadata="${ORDERS_METADATA}"`,
    );
  });

  test('documents follow a route reload', async (t) => {
    const gw = await start(t, true);
    const file = gw.configFile as string;
    const settings = JSON.parse(await readFile(file, 'utf8'));
    settings.routes = [
      ...routesFor(gw.upstream.url),
      { id: 'billing', prefix: '/v1/billing', upstream: gw.upstream.url, scopes: ['billing:read'] },
    ];
    await writeFile(file, JSON.stringify(settings));
    await gw.app.reload();
    const billing = await waitFor('the billing document', async () => {
      const res = await fetch(`${gw.url}${WELL_KNOWN}/v1/billing`);
      if (res.status !== 200) {
        await res.arrayBuffer();
        return undefined;
      }
      return (await res.json()) as Record<string, unknown>;
    });
    assert.deepEqual(billing.scopes_supported, ['billing:read']);
    assert.deepEqual((await documentAt(gw, WELL_KNOWN)).scopes_supported, [
      'billing:read',
      'orders:read',
      'reports:read',
    ]);
    const server = await documentAt(gw, '/.well-known/oauth-authorization-server');
    assert.ok(
      (server.protected_resources as string[]).includes('https://portaria.test/v1/billing'),
    );
  });
});
