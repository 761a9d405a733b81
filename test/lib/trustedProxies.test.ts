/**
 * The client's address behind trusted proxies: which X-Forwarded-For hop is the client,
 * for each kind of trusted-proxy entry, and which entries the configuration refuses.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TrustedProxies, trustedProxyProblem } from '../../src/lib/trustedProxies.js';

describe('TrustedProxies.hops', () => {
  /** [trusted, peer, X-Forwarded-For, hops (client first)]. */
  const cases: [string[], string | undefined, string | string[] | undefined, string[]][] = [
    [[], '127.0.0.1', '203.0.113.9', ['127.0.0.1']],
    [['10.0.0.0/8'], '127.0.0.1', '203.0.113.9', ['127.0.0.1']],
    [['127.0.0.1'], '127.0.0.1', undefined, ['127.0.0.1']],
    [['127.0.0.1'], '127.0.0.1', '', ['127.0.0.1']],
    [['127.0.0.1'], '127.0.0.1', '203.0.113.9', ['203.0.113.9', '127.0.0.1']],
    [['loopback'], '127.0.0.1', '6.6.6.6, 203.0.113.9', ['203.0.113.9', '127.0.0.1']],
    [
      ['loopback', '10.0.0.0/8'],
      '127.0.0.1',
      '6.6.6.6, 203.0.113.9, 10.1.2.3',
      ['203.0.113.9', '10.1.2.3', '127.0.0.1'],
    ],
    [
      ['loopback', '10.0.0.0/255.0.0.0'],
      '127.0.0.1',
      ['6.6.6.6', '203.0.113.9, 10.1.2.3'],
      ['203.0.113.9', '10.1.2.3', '127.0.0.1'],
    ],
    [['loopback', 'uniquelocal'], '127.0.0.1', '10.0.0.7', ['10.0.0.7', '127.0.0.1']],
    [['loopback'], '::ffff:127.0.0.1', '203.0.113.9', ['203.0.113.9', '::ffff:127.0.0.1']],
    [['::1'], '::1', '6.6.6.6, 2001:db8::1', ['2001:db8::1', '::1']],
    [['fd00::/8'], 'fd00::7', '2001:db8::1, fd12::1', ['2001:db8::1', 'fd12::1', 'fd00::7']],
    [['linklocal'], 'fe80::1', '192.0.2.5', ['192.0.2.5', 'fe80::1']],
    [['loopback'], '127.0.0.1', 'not-an-ip', ['127.0.0.1']],
    [['loopback'], '127.0.0.1', '203.0.113.9:4711', ['127.0.0.1']],
    [['loopback'], '127.0.0.1', '[2001:db8::1]', ['127.0.0.1']],
    [['loopback'], '127.0.0.1', '2130706433', ['127.0.0.1']],
    [['loopback'], '127.0.0.1', '6.6.6.6, 2130706433', ['127.0.0.1']],
    [['loopback', '10.0.0.0/8'], '127.0.0.1', '6.6.6.6, 10.0.0.1, junk', ['127.0.0.1']],
    [['loopback', '10.0.0.0/8'], '127.0.0.1', 'junk, 10.0.0.1', ['10.0.0.1', '127.0.0.1']],
    [['loopback'], '127.0.0.1', ' , ,203.0.113.9 ,', ['203.0.113.9', '127.0.0.1']],
    [['loopback'], undefined, '203.0.113.9', ['']],
  ];
  for (const [trusted, peer, xff, hops] of cases) {
    test(`${JSON.stringify(xff)} from ${peer} trusting ${JSON.stringify(trusted)} is ${JSON.stringify(hops)}`, () => {
      const proxies = new TrustedProxies(trusted);
      assert.deepEqual(proxies.hops(peer, xff), hops);
      const headers = xff === undefined ? {} : { 'x-forwarded-for': xff };
      assert.equal(proxies.clientAddress({ socket: { remoteAddress: peer }, headers }), hops[0]);
    });
  }
});

describe('trustedProxyProblem', () => {
  for (const entry of [
    '10.0.0.1',
    '10.0.0.0/8',
    '10.0.0.0/255.0.0.0',
    '2001:db8::/32',
    '::1',
    'loopback',
    'linklocal',
    'uniquelocal',
  ]) {
    test(`accepts ${entry}`, () => {
      assert.equal(trustedProxyProblem(entry), null);
    });
  }
  for (const entry of [
    '10.0.0.0/33',
    '10.0.0.0/0',
    '2001:db8::/129',
    'proxy.internal',
    '2130706433',
    '0x7f.1',
    '10.0.0.0/8x',
    'Loopback',
    '',
  ]) {
    test(`refuses ${JSON.stringify(entry)}`, () => {
      assert.equal(
        trustedProxyProblem(entry),
        `"${entry}" is not an IP address, a CIDR (10.0.0.0/8, fd00::/8) or one of loopback, linklocal, uniquelocal`,
      );
    });
  }
});
