/** The compact principal reads every member from the claims, the issuer and the shared scope. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ScopeSets } from '../../src/verify/scopeSets.js';
import { VerifiedPrincipal } from '../../src/verify/verifiedPrincipal.js';

const ISSUER = { issuer: 'https://portaria.test', id: 'self' };

describe('VerifiedPrincipal', () => {
  test('every member of the Principal, from the claims, the issuer and the scope', () => {
    const claims = Object.freeze({
      iss: ISSUER.issuer,
      sub: 'user-7',
      client_id: 'acme',
      aud: 'orders-api',
      iat: 1_800_000_000,
      exp: 1_800_000_600,
      jti: 't-1',
      scope: 'orders:read orders:write',
      tenant: 'eu',
    });
    const p = new VerifiedPrincipal(claims, ISSUER, new ScopeSets().get(claims.scope));
    assert.deepEqual(
      {
        subject: p.subject,
        clientId: p.clientId,
        scope: p.scope,
        scopes: [...p.scopes],
        tokenId: p.tokenId,
        issuer: p.issuer,
        issuerId: p.issuerId,
        issuedAt: p.issuedAt,
        expiresAt: p.expiresAt,
      },
      {
        subject: 'user-7',
        clientId: 'acme',
        scope: 'orders:read orders:write',
        scopes: ['orders:read', 'orders:write'],
        tokenId: 't-1',
        issuer: ISSUER.issuer,
        issuerId: 'self',
        issuedAt: 1_800_000_000,
        expiresAt: 1_800_000_600,
      },
    );
    assert.equal(p.claims, claims);
    assert.equal(p.claims.tenant, 'eu');
  });

  test('without client_id the client is the sub', () => {
    const claims = Object.freeze({ sub: 'acme', jti: 't', iat: 1, exp: 2 });
    const p = new VerifiedPrincipal(claims, ISSUER, new ScopeSets().get(''));
    assert.equal(p.clientId, 'acme');
    assert.equal(p.scope, '');
    assert.equal(p.scopes.size, 0);
  });

  test('it is frozen: no member can be set or added', () => {
    const claims = Object.freeze({ sub: 'acme', jti: 't', iat: 1, exp: 2 });
    const p = new VerifiedPrincipal(claims, ISSUER, new ScopeSets().get(''));
    assert.ok(Object.isFrozen(p));
    assert.throws(() => {
      (p as unknown as Record<string, unknown>).subject = 'admin';
    }, TypeError);
    assert.throws(() => {
      (p as unknown as Record<string, unknown>).extra = 1;
    }, TypeError);
  });
});
