/**
 * The client-certificate fields a proxy sets never reach an upstream: from a trusted
 * proxy or anyone else, in any case and `_` spelling, the known names and the configured
 * one. (The gateway reads them first, `http/certificateHeaderStep.ts`.)
 */
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, test } from 'node:test';
import {
  CERTIFICATE_HEADERS,
  certificateHeadersRemoved,
} from '../../src/config/certificateHeaders.js';
import { TrustedProxies } from '../../src/lib/trustedProxies.js';
import { createHeaderPolicy, type UpstreamRequestContext } from '../../src/proxy/headers.js';
import { IDENTITY_HEADERS, principal } from './fixtures.js';

const ctx: UpstreamRequestContext = {
  principal: principal(),
  requestId: 'req-1',
  peerAddress: '10.0.0.7',
  host: 'api.example.com',
  proto: 'https',
};

function policy(trustedProxies: string[], certificateHeaders: readonly string[]) {
  return createHeaderPolicy({
    identityHeaders: IDENTITY_HEADERS,
    forwardAuthorization: true,
    trustedProxies: new TrustedProxies(trustedProxies),
    forwardCallerHeaders: [],
    certificateHeaders,
  });
}

const removed = certificateHeadersRemoved('X-Partner-Cert');

describe('client-certificate headers towards the upstream', () => {
  for (const [peer, proxies] of [
    ['a trusted proxy', ['10.0.0.0/8']],
    ['an untrusted peer', []],
  ] as const) {
    test(`are removed from ${peer}, with the configured name`, () => {
      const incoming: IncomingHttpHeaders = { accept: 'application/json', 'x-partner-cert': 'v' };
      for (const name of CERTIFICATE_HEADERS) incoming[name] = 'client-written';
      const out = policy([...proxies], removed).upstreamRequestHeaders(incoming, ctx);
      assert.equal(out.accept, 'application/json');
      for (const name of [...CERTIFICATE_HEADERS, 'x-partner-cert']) {
        assert.equal(out[name], undefined, name);
      }
    });
  }

  test('the _ spellings are removed too (CGI servers read them as -)', () => {
    const out = policy([], removed).upstreamRequestHeaders(
      {
        x_ssl_client_cert: 'v',
        client_cert: 'v',
        x_forwarded_client_cert: 'v',
        x_partner_cert: 'v',
      },
      ctx,
    );
    assert.deepEqual(
      Object.keys(out).filter((k) => k.includes('cert')),
      [],
    );
  });

  test('without certificate settings nothing else is removed', () => {
    const out = policy([], []).upstreamRequestHeaders({ 'x-partner-cert': 'v' }, ctx);
    assert.equal(out['x-partner-cert'], 'v');
  });
});
