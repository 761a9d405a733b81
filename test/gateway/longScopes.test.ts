/**
 * A client's scopes travel in every token it gets: the longest scope set the clients file
 * accepts (4096 characters space-separated) must give a token the gateway's own listener
 * accepts; a longer one is refused where it is written, not at the first request (431).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_SCOPE_TEXT } from '../../src/clients/clientRegistry.js';
import { DEFAULT_CLIENTS, startGateway } from '../helpers/fixture.js';
import { runCli, tempDir } from '../helpers/runCli.js';

/** 1024 distinct 3-character scopes: 4095 characters space-separated. */
const LONGEST = Array.from({ length: 1024 }, (_, i) => i.toString(36).padStart(3, '0'));

describe('scope length', () => {
  test('the longest allowed scope set gives a token the listener accepts (default header limit)', async (t) => {
    assert.ok(LONGEST.join(' ').length <= MAX_SCOPE_TEXT);
    const secret = 'wide-secret-0123456789abcdefghijklmnopqrs';
    const gw = await startGateway(t, {
      clients: [...DEFAULT_CLIENTS, { id: 'wide', secret, scopes: LONGEST }],
    });
    const token = await gw.token('wide', secret);
    const res = await fetch(`${gw.url}/v1/orders/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 200);
    assert.equal(gw.upstream.received.at(-1)?.headers['x-token-scope'], LONGEST.join(' '));
  });

  test('clients add refuses a longer scope set (exit 2) and writes nothing', async (t) => {
    const cwd = await tempDir(t);
    const r = await runCli(
      ['clients', 'add', 'big', '--scopes', 'a'.repeat(13_000), '--clients-file', 'c.json'],
      { cwd },
    );
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /--scopes: the scopes take 13000 characters space-separated, more than 4096/,
    );
    assert.equal(r.stdout, '');
  });
});
