import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createClientAuthenticator } from '../../src/clients/authenticateClient.js';
import { buildClientRegistry } from '../../src/clients/clientRegistry.js';
import {
  hashChosenSecret,
  hashGeneratedSecret,
  type ParsedHash,
  verifySecret,
} from '../../src/clients/secretHash.js';
import { ManualClock } from '../../src/lib/clock.js';

const NOW = Date.UTC(2026, 0, 1);
const OLD = 'old-secret-0123456789abcdefghijklmnopqrstu';
const NEW = 'new-secret-0123456789abcdefghijklmnopqrstu';
const CHOSEN = 'an operator chosen secret';

/** Records the scheme of every verification, then does the real one. */
function countingVerifier(): {
  calls: ParsedHash['scheme'][];
  verify: (secret: string, hash: ParsedHash) => Promise<boolean>;
} {
  const calls: ParsedHash['scheme'][] = [];
  return {
    calls,
    verify: (secret, hash) => {
      calls.push(hash.scheme);
      return verifySecret(secret, hash);
    },
  };
}

function sha256Registry() {
  return buildClientRegistry(
    {
      clients: [
        {
          id: 'acme',
          secrets: [
            { hash: hashGeneratedSecret(OLD), expiresAt: '2026-01-02T00:00:00Z' },
            { hash: hashGeneratedSecret(NEW) },
          ],
          scopes: ['orders:read'],
        },
        { id: 'single', secrets: [{ hash: hashGeneratedSecret(NEW) }], scopes: ['a'] },
        {
          id: 'gone',
          secrets: [{ hash: hashGeneratedSecret(NEW) }],
          scopes: ['a'],
          disabled: true,
        },
      ],
    },
    'test',
  );
}

describe('createClientAuthenticator', () => {
  test('accepts the current secret on the second slot', async () => {
    const auth = createClientAuthenticator(sha256Registry(), new ManualClock(NOW));
    const result = await auth('acme', NEW);
    assert.equal(result.ok, true);
    assert.equal(result.ok && result.client.id, 'acme');
  });

  test('accepts the previous secret on the first slot until it expires', async () => {
    const clock = new ManualClock(NOW);
    const auth = createClientAuthenticator(sha256Registry(), clock);
    assert.equal((await auth('acme', OLD)).ok, true);
    clock.set(Date.UTC(2026, 0, 2) - 1);
    assert.equal((await auth('acme', OLD)).ok, true);
  });

  test('refuses a secret from the moment it expires with reason secret-expired', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 2));
    const auth = createClientAuthenticator(sha256Registry(), clock);
    assert.deepEqual(await auth('acme', OLD), { ok: false, reason: 'secret-expired' });
    assert.equal((await auth('acme', NEW)).ok, true);
  });

  test('refuses a wrong secret with reason bad-secret', async () => {
    const auth = createClientAuthenticator(sha256Registry(), new ManualClock(NOW));
    assert.deepEqual(await auth('acme', 'wrong'), { ok: false, reason: 'bad-secret' });
    assert.deepEqual(await auth('acme', ''), { ok: false, reason: 'bad-secret' });
  });

  test('refuses an unknown client with reason unknown-client', async () => {
    const auth = createClientAuthenticator(sha256Registry(), new ManualClock(NOW));
    assert.deepEqual(await auth('nobody', NEW), { ok: false, reason: 'unknown-client' });
    assert.deepEqual(await auth('__proto__', NEW), { ok: false, reason: 'unknown-client' });
  });

  test('refuses a disabled client with its correct secret with reason disabled-client', async () => {
    const auth = createClientAuthenticator(sha256Registry(), new ManualClock(NOW));
    assert.deepEqual(await auth('gone', NEW), { ok: false, reason: 'disabled-client' });
    assert.deepEqual(await auth('gone', 'wrong'), { ok: false, reason: 'bad-secret' });
  });

  test('does two sha256 verifications for every outcome of a sha256-only registry', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 2));
    const counter = countingVerifier();
    const auth = createClientAuthenticator(sha256Registry(), clock, {
      verifySecret: counter.verify,
    });
    const attempts: [string, string][] = [
      ['acme', NEW], // ok, second slot
      ['acme', OLD], // expired
      ['acme', 'wrong'],
      ['single', NEW], // one real secret, one dummy
      ['gone', NEW], // disabled
      ['nobody', NEW], // unknown: two dummies
    ];
    for (const [id, secret] of attempts) {
      counter.calls.length = 0;
      await auth(id, secret);
      assert.deepEqual(counter.calls, ['sha256', 'sha256'], `${id} / ${secret}`);
    }
  });

  test('does one scrypt and one sha256 verification for every outcome once scrypt is in use', async () => {
    const registry = buildClientRegistry(
      {
        clients: [
          { id: 'random', secrets: [{ hash: hashGeneratedSecret(NEW) }], scopes: ['a'] },
          { id: 'chosen', secrets: [{ hash: await hashChosenSecret(CHOSEN) }], scopes: ['a'] },
        ],
      },
      'test',
    );
    assert.equal(registry.usesScrypt, true);
    const counter = countingVerifier();
    const auth = createClientAuthenticator(registry, new ManualClock(NOW), {
      verifySecret: counter.verify,
    });
    const attempts: [string, string, boolean][] = [
      ['random', NEW, true],
      ['random', 'wrong', false],
      ['chosen', CHOSEN, true],
      ['chosen', 'wrong', false],
      ['nobody', CHOSEN, false],
    ];
    for (const [id, secret, ok] of attempts) {
      counter.calls.length = 0;
      assert.equal((await auth(id, secret)).ok, ok, `${id} / ${secret}`);
      assert.deepEqual(counter.calls, ['scrypt', 'sha256'], `${id} / ${secret}`);
    }
  });

  test('verifies an unknown client against two distinct dummy hashes, none of them a real one', async () => {
    const registry = sha256Registry();
    const seen: ParsedHash[] = [];
    const auth = createClientAuthenticator(registry, new ManualClock(NOW), {
      verifySecret: (secret, hash) => {
        seen.push(hash);
        return verifySecret(secret, hash);
      },
    });
    // A secret valid for other clients does not help an unknown id.
    assert.deepEqual(await auth('unknown', NEW), { ok: false, reason: 'unknown-client' });
    const real = registry
      .ids()
      .flatMap((id) => (registry.get(id)?.secrets ?? []).map((s) => s.hash.digest.toString('hex')));
    const dummies = seen.map((h) => h.digest.toString('hex'));
    assert.equal(dummies.length, 2);
    assert.notEqual(dummies[0], dummies[1]);
    for (const d of dummies) assert.equal(real.includes(d), false);
  });
});
