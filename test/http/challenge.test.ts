/**
 * The edge's `WWW-Authenticate` challenges (RFC 6750 §3, RFC 9728 §5.1) and the OAuth
 * endpoints' Basic challenge, from the failure and the request alone.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RouteConfig } from '../../src/config/types.js';
import { parseRequestTarget } from '../../src/domain/requestPath.js';
import { type FailureReason, PortariaError, type ProblemCode } from '../../src/errors.js';
import { basicChallenge, EdgeChallenge } from '../../src/http/challenge.js';
import { OAuthError } from '../../src/oauth/oauthError.js';
import { compileRouteTable } from '../../src/proxy/routeTable.js';

const orders: RouteConfig = {
  id: 'orders',
  prefix: '/v1/orders',
  upstream: 'http://127.0.0.1:9',
  scopes: ['orders:read', 'orders:write'],
  timeoutMs: 1000,
  audience: null,
};
const table = compileRouteTable({
  routes: [orders],
  upstream: { default: null, timeoutMs: 1000, connections: 1 },
});
const route = table.match('/v1/orders/1');

function refusal(code: ProblemCode, reason: FailureReason = code): PortariaError {
  return new PortariaError(code, 'detail', { reason });
}

describe('EdgeChallenge', () => {
  const plain = new EdgeChallenge(null);
  const request = { target: parseRequestTarget('/v1/orders/1'), route };
  const cases: [ProblemCode, string | undefined][] = [
    ['token-missing', 'Bearer realm="portaria"'],
    ['token-invalid', 'Bearer realm="portaria", error="invalid_token"'],
    ['token-expired', 'Bearer realm="portaria", error="invalid_token"'],
    ['token-revoked', 'Bearer realm="portaria", error="invalid_token"'],
    [
      'insufficient-scope',
      'Bearer realm="portaria", error="insufficient_scope", scope="orders:read orders:write"',
    ],
    ['not-found', undefined],
    ['service-unavailable', undefined],
    ['invalid-client', undefined],
    ['invalid-path', undefined],
  ];
  for (const [code, expected] of cases) {
    test(`${code} → ${expected ?? 'no challenge'}`, () => {
      assert.equal(plain.header(refusal(code), request), expected);
    });
  }

  test('with the OAuth surface on, a challenge names the route’s metadata, quoted safely', () => {
    const seen: (string | undefined)[] = [];
    const withMetadata = new EdgeChallenge((path, matched) => {
      seen.push(path, matched?.id);
      return 'https://gw.test/.well-known/oauth-protected-resource/v1/"orders"\\';
    });
    assert.equal(
      withMetadata.header(refusal('token-missing'), request),
      'Bearer realm="portaria", resource_metadata="https://gw.test/.well-known/oauth-protected-resource/v1/%22orders%22%5C"',
    );
    assert.deepEqual(seen, ['/v1/orders/1', 'orders']);
    assert.equal(withMetadata.header(refusal('not-found'), request), undefined);
  });
});

describe('basicChallenge', () => {
  const refused = new OAuthError('invalid_client', 'No.', { reason: 'bad-secret' });
  test('a 401 to a request that sent Authorization asks for Basic again', () => {
    assert.equal(basicChallenge(refused, 'Basic eDp5'), 'Basic realm="portaria"');
  });
  test('a 401 without Authorization, or any other status, asks for nothing', () => {
    assert.equal(basicChallenge(refused, undefined), undefined);
    const scope = new OAuthError('invalid_scope', 'No.', { reason: 'scope-not-granted' });
    assert.equal(basicChallenge(scope, 'Basic eDp5'), undefined);
  });
});
