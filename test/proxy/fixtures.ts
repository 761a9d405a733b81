/** Shared test fixtures for the proxy layer: a hand-built principal and the default mapping. */
import type { Principal } from '../../src/domain/principal.js';

export const IDENTITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  sub: 'X-Client-Id',
  scope: 'X-Token-Scope',
  jti: 'X-Token-Jti',
});

export function principal(claims: Record<string, unknown> = {}): Principal {
  const all: Record<string, unknown> = {
    iss: 'https://portaria.test',
    sub: 'client-a',
    client_id: 'client-a',
    jti: 'jti-1',
    iat: 1_700_000_000,
    exp: 1_700_003_600,
    scope: 'orders:read orders:write',
    ...claims,
  };
  const scope = typeof all.scope === 'string' ? all.scope : '';
  return {
    subject: String(all.sub),
    clientId: String(all.client_id),
    scope,
    scopes: new Set(scope.split(' ').filter((s) => s !== '')),
    tokenId: String(all.jti),
    issuerId: 'self',
    issuer: String(all.iss),
    issuedAt: Number(all.iat),
    expiresAt: Number(all.exp),
    claims: all,
  };
}
