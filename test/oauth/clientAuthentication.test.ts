/**
 * `authenticateOAuthClient` through its interface: a real registry, the real secret
 * authenticator, the real local token limiter, real keys on disk and real signed
 * assertions, a manual clock.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { SignJWT } from 'jose';
import { createClientAuthenticator } from '../../src/clients/authenticateClient.js';
import { buildClientRegistry } from '../../src/clients/clientRegistry.js';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { validateConfig } from '../../src/config/validateConfig.js';
import { oauthErrorJson, PortariaError } from '../../src/errors.js';
import { basicChallenge } from '../../src/http/challenge.js';
import { NO_STORE } from '../../src/http/replies.js';
import { ManualClock } from '../../src/lib/clock.js';
import type { TokenEndpointLimits } from '../../src/limits/tokenEndpointLimits.js';
import { JWT_BEARER_ASSERTION } from '../../src/oauth/clientAssertion.js';
import {
  authenticateOAuthClient,
  type ClientAuthenticationDeps,
} from '../../src/oauth/clientAuthentication.js';
import { ClientKeys } from '../../src/oauth/clientKeys.js';
import { LocalReplayStore } from '../../src/oauth/localReplayStore.js';
import { OAuthError } from '../../src/oauth/oauthError.js';
import { ecKey, type TestKey } from '../helpers/jwksServer.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { localTokenLimits } from '../helpers/localTokenLimits.js';

const NOW = Date.UTC(2026, 0, 1, 12);
const SECRET = 'secret-0123456789abcdefghijklmnopqrstuvwxyz';
const ODD_ID = 'part:ner %+ é';
const ODD_SECRET = 'p:a%s+s w/ö';
const ENDPOINT = 'https://portaria.test/oauth2/token';
const ISSUER = 'https://portaria.test';

interface Setup {
  deps: ClientAuthenticationDeps;
  clock: ManualClock;
  key: TestKey;
  limiter: TokenEndpointLimits;
}

async function setup(t: TestContext, limits: Record<string, unknown> = {}): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-oauth-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const key = ecKey('k1');
  await writeFile(join(dir, 'signer.jwks.json'), JSON.stringify({ keys: [key.jwk] }));
  const registry = buildClientRegistry(
    {
      clients: [
        { id: 'acme', secrets: [{ hash: hashGeneratedSecret(SECRET) }], scopes: ['a', 'b'] },
        {
          id: ODD_ID,
          secrets: [{ hash: hashGeneratedSecret(ODD_SECRET) }],
          scopes: ['a'],
          authMethods: ['client_secret_basic'],
        },
        {
          id: 'signer',
          secrets: [],
          scopes: ['a'],
          authMethods: ['private_key_jwt'],
          jwksFile: 'signer.jwks.json',
        },
        {
          id: 'gone',
          secrets: [],
          scopes: ['a'],
          authMethods: ['private_key_jwt'],
          jwksFile: 'signer.jwks.json',
          disabled: true,
        },
      ],
    },
    'test',
  );
  const clock = new ManualClock(NOW);
  const config = validateConfig({ tokenLimits: limits }, { baseDir: dir });
  const limiter = localTokenLimits(config.tokenLimits, clock);
  const keys = new ClientKeys({ clock, baseDir: dir, clockSkewSeconds: 60 });
  t.after(() => keys.close());
  const authenticator = createClientAuthenticator(registry, clock);
  return {
    clock,
    key,
    limiter,
    deps: {
      registry: () => registry,
      authenticate: () => authenticator,
      assertions: {
        audiences: new Set([ENDPOINT, ISSUER]),
        maxLifetimeSeconds: 300,
        clockSkewSeconds: 60,
        clock,
        keys,
        replay: new LocalReplayStore(clock),
      },
      limiter,
      attempts: null,
      onLimited: () => undefined,
    },
  };
}

const CALL = { authorization: undefined, clientAddress: '192.0.2.1' };

function basic(id: string, secret: string): string {
  const encode = (s: string) => encodeURIComponent(s).replaceAll('%20', '+');
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;
}

async function assertion(
  s: Setup,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
  key = s.key,
): Promise<string> {
  const now = Math.floor(s.clock.now() / 1000);
  return new SignJWT({
    iss: 'signer',
    sub: 'signer',
    aud: ENDPOINT,
    jti: `jti-${Math.random()}`,
    iat: now,
    exp: now + 60,
    ...claims,
  })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid, ...header })
    .sign(key.privateKey);
}

function jwtForm(token: string, extra: Record<string, string> = {}): Map<string, string> {
  return new Map(
    Object.entries({
      client_assertion_type: JWT_BEARER_ASSERTION,
      client_assertion: token,
      ...extra,
    }),
  );
}

/** The headers the OAuth entry answers a refusal with, for a request that sent `authorization`. */
function headersOf(error: OAuthError, authorization?: string): Record<string, string> {
  const challenge = basicChallenge(error, authorization);
  return { ...NO_STORE, ...(challenge === undefined ? {} : { 'www-authenticate': challenge }) };
}

/** `basic`: the request sent this Authorization value (the OAuth entry's challenge reads it). */
function refused(error: string, reason: string, basic?: string) {
  return (err: unknown) => {
    assert.ok(err instanceof OAuthError, String(err));
    assert.equal(err.error, error);
    assert.equal(err.reason, reason);
    assert.equal(headersOf(err, basic)['www-authenticate'] !== undefined, basic !== undefined);
    return true;
  };
}

describe('client_secret_basic', () => {
  test('accepts an id and a secret form-urlencoded before Base64 (RFC 6749 §2.3.1)', async (t) => {
    const s = await setup(t);
    const result = await authenticateOAuthClient(
      new Map(),
      { ...CALL, authorization: basic(ODD_ID, ODD_SECRET) },
      s.deps,
    );
    assert.equal(result.client.id, ODD_ID);
    assert.equal(result.method, 'client_secret_basic');
  });

  test('refuses the same credentials sent without the form encoding', async (t) => {
    const s = await setup(t);
    const raw = `Basic ${Buffer.from(`${ODD_ID}:${ODD_SECRET}`).toString('base64')}`;
    await assert.rejects(
      authenticateOAuthClient(new Map(), { ...CALL, authorization: raw }, s.deps),
      refused('invalid_client', 'bad-basic', raw),
    );
  });

  test('unknown client and wrong secret get the same answer, with the Basic challenge', async (t) => {
    const s = await setup(t);
    const answers = [];
    for (const [id, secret] of [
      ['nobody', SECRET],
      ['acme', 'wrong'],
    ] as const) {
      const authorization = basic(id, secret);
      try {
        await authenticateOAuthClient(new Map(), { ...CALL, authorization }, s.deps);
        assert.fail('accepted');
      } catch (error) {
        const e = error as OAuthError;
        answers.push({
          status: e.status,
          body: oauthErrorJson(e),
          headers: headersOf(e, authorization),
        });
      }
    }
    assert.deepEqual(answers[0], answers[1]);
    assert.equal(answers[0]?.status, 401);
    assert.equal(answers[0]?.headers['www-authenticate'], 'Basic realm="portaria"');
  });

  const malformed = {
    'another scheme': 'Bearer abc',
    'no colon': `Basic ${Buffer.from('acme').toString('base64')}`,
    'non-canonical Base64': 'Basic YWNtZTpzZWNyZXQ',
    'malformed percent-encoding': `Basic ${Buffer.from('acme:%zz').toString('base64')}`,
    'an empty secret': `Basic ${Buffer.from('acme:').toString('base64')}`,
  };
  for (const [name, header] of Object.entries(malformed)) {
    test(`refuses ${name} as invalid_client with the challenge`, async (t) => {
      const s = await setup(t);
      await assert.rejects(
        authenticateOAuthClient(new Map(), { ...CALL, authorization: header }, s.deps),
        (err: unknown) =>
          err instanceof OAuthError &&
          err.error === 'invalid_client' &&
          headersOf(err, header)['www-authenticate'] === 'Basic realm="portaria"',
      );
    });
  }

  test('refuses a client that does not allow client_secret_post, after its secret', async (t) => {
    const s = await setup(t);
    const form = new Map([
      ['client_id', ODD_ID],
      ['client_secret', ODD_SECRET],
    ]);
    await assert.rejects(
      authenticateOAuthClient(form, CALL, s.deps),
      refused('invalid_client', 'auth-method-not-allowed'),
    );
  });
});

describe('one method per request', () => {
  test('Basic and client_secret in the form → invalid_request', async (t) => {
    const s = await setup(t);
    const form = new Map([
      ['client_id', 'acme'],
      ['client_secret', SECRET],
    ]);
    await assert.rejects(
      authenticateOAuthClient(form, { ...CALL, authorization: basic('acme', SECRET) }, s.deps),
      refused('invalid_request', 'several-client-auth'),
    );
  });

  test('an assertion beside a client_secret → invalid_request', async (t) => {
    const s = await setup(t);
    const form = jwtForm(await assertion(s), { client_id: 'signer', client_secret: SECRET });
    await assert.rejects(
      authenticateOAuthClient(form, CALL, s.deps),
      refused('invalid_request', 'several-client-auth'),
    );
  });

  test('no authentication at all → invalid_client', async (t) => {
    const s = await setup(t);
    await assert.rejects(
      authenticateOAuthClient(new Map([['client_id', 'acme']]), CALL, s.deps),
      refused('invalid_client', 'no-client-auth'),
    );
  });

  test('client_secret_post accepts a client with the default methods', async (t) => {
    const s = await setup(t);
    const form = new Map([
      ['client_id', 'acme'],
      ['client_secret', SECRET],
    ]);
    const result = await authenticateOAuthClient(form, CALL, s.deps);
    assert.equal(result.method, 'client_secret_post');
  });
});

describe('private_key_jwt', () => {
  test('accepts a signed assertion once and refuses its replay', async (t) => {
    const s = await setup(t);
    const token = await assertion(s);
    const result = await authenticateOAuthClient(jwtForm(token), CALL, s.deps);
    assert.equal(result.client.id, 'signer');
    assert.equal(result.method, 'private_key_jwt');
    await assert.rejects(
      authenticateOAuthClient(jwtForm(token), CALL, s.deps),
      refused('invalid_client', 'assertion-replayed'),
    );
  });

  test('accepts the issuer as audience too', async (t) => {
    const s = await setup(t);
    const token = await assertion(s, { aud: [ISSUER, 'https://other.test'] });
    assert.equal((await authenticateOAuthClient(jwtForm(token), CALL, s.deps)).client.id, 'signer');
  });

  test('the replay entry outlives exp + skew, then the jti may be seen again', async (t) => {
    const s = await setup(t);
    const store = s.deps.assertions.replay as LocalReplayStore;
    const now = Math.floor(NOW / 1000);
    assert.equal(store.claim('signer', 'j', (now + 60) * 1000), true);
    s.clock.advance(59_000);
    assert.equal(store.claim('signer', 'j', (now + 60) * 1000), false);
    s.clock.advance(1000);
    assert.equal(store.claim('signer', 'j', (now + 120) * 1000), true);
  });

  test('an assertion with a fractional exp cannot be replayed in its last accepted second', async (t) => {
    const s = await setup(t);
    // exp + skew = now + 70.5: accepted while the whole-second now is below it, that is
    // until now + 71 s; the replay entry must last as long.
    const token = await assertion(s, { exp: Math.floor(NOW / 1000) + 10.5 });
    assert.equal((await authenticateOAuthClient(jwtForm(token), CALL, s.deps)).client.id, 'signer');
    s.clock.advance(70_600);
    await assert.rejects(
      authenticateOAuthClient(jwtForm(token), CALL, s.deps),
      refused('invalid_client', 'assertion-replayed'),
    );
    s.clock.advance(400);
    await assert.rejects(
      authenticateOAuthClient(jwtForm(token), CALL, s.deps),
      refused('invalid_client', 'assertion-expired'),
    );
  });

  const bad: Record<
    string,
    { claims?: Record<string, unknown>; header?: Record<string, unknown>; reason: string }
  > = {
    'another audience': {
      claims: { aud: 'https://elsewhere.test/token' },
      reason: 'assertion-audience',
    },
    'no audience': { claims: { aud: undefined }, reason: 'assertion-audience' },
    'an expired exp': { claims: { exp: Math.floor(NOW / 1000) - 61 }, reason: 'assertion-expired' },
    'no exp': { claims: { exp: undefined }, reason: 'assertion-expired' },
    'an exp too far ahead': {
      claims: { exp: Math.floor(NOW / 1000) + 361 },
      reason: 'assertion-too-long',
    },
    'nbf ahead': {
      claims: { nbf: Math.floor(NOW / 1000) + 120 },
      reason: 'assertion-not-yet-valid',
    },
    'iat ahead': {
      claims: { iat: Math.floor(NOW / 1000) + 120 },
      reason: 'assertion-not-yet-valid',
    },
    'no jti': { claims: { jti: undefined }, reason: 'assertion-no-jti' },
    'sub other than iss': { claims: { sub: 'acme' }, reason: 'assertion-claims' },
    'no kid': { header: { kid: undefined }, reason: 'assertion-no-kid' },
    'an unknown kid': { header: { kid: 'k2' }, reason: 'assertion-unknown-key' },
    'an unknown client': { claims: { iss: 'nobody', sub: 'nobody' }, reason: 'unknown-client' },
    'a client without private_key_jwt': {
      claims: { iss: 'acme', sub: 'acme' },
      reason: 'auth-method-not-allowed',
    },
    'a disabled client': { claims: { iss: 'gone', sub: 'gone' }, reason: 'disabled-client' },
  };
  for (const [name, { claims, header, reason }] of Object.entries(bad)) {
    test(`refuses an assertion with ${name}`, async (t) => {
      const s = await setup(t);
      await assert.rejects(
        authenticateOAuthClient(jwtForm(await assertion(s, claims, header)), CALL, s.deps),
        refused('invalid_client', reason),
      );
    });
  }

  test('refuses an assertion signed by another key under the client’s kid', async (t) => {
    const s = await setup(t);
    const impostor = ecKey('k1');
    await assert.rejects(
      authenticateOAuthClient(jwtForm(await assertion(s, {}, {}, impostor)), CALL, s.deps),
      refused('invalid_client', 'assertion-signature'),
    );
  });

  test('refuses alg none and HS256 before any key lookup', async (t) => {
    const s = await setup(t);
    const now = Math.floor(NOW / 1000);
    const claims = { iss: 'signer', sub: 'signer', aud: ENDPOINT, jti: 'x', exp: now + 60 };
    const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const none = `${enc({ alg: 'none' })}.${enc(claims)}.`;
    const hs256 = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .sign(Buffer.from(JSON.stringify(s.key.jwk)));
    const noneWithSig = `${enc({ alg: 'none', kid: 'k1' })}.${enc(claims)}.AAAA`;
    for (const token of [none, noneWithSig]) {
      await assert.rejects(
        authenticateOAuthClient(jwtForm(token), CALL, s.deps),
        (err: unknown) => {
          return err instanceof OAuthError && err.error === 'invalid_client';
        },
      );
    }
    await assert.rejects(
      authenticateOAuthClient(jwtForm(hs256), CALL, s.deps),
      refused('invalid_client', 'assertion-alg'),
    );
    await assert.rejects(
      authenticateOAuthClient(jwtForm(noneWithSig), CALL, s.deps),
      refused('invalid_client', 'assertion-alg'),
    );
  });

  test('refuses an alg other than the client’s pinned one', async (t) => {
    const s = await setup(t);
    const { privateKey } = newKeyPair('ec', { namedCurve: 'P-384' });
    const p384 = { ...s.key, privateKey };
    await assert.rejects(
      authenticateOAuthClient(
        jwtForm(await assertion(s, {}, { alg: 'ES384' }, p384)),
        CALL,
        s.deps,
      ),
      refused('invalid_client', 'assertion-alg'),
    );
  });

  test('refuses another assertion type and a client_id naming someone else', async (t) => {
    const s = await setup(t);
    const token = await assertion(s);
    await assert.rejects(
      authenticateOAuthClient(
        jwtForm(token, {
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:saml2-bearer',
        }),
        CALL,
        s.deps,
      ),
      refused('invalid_client', 'assertion-type'),
    );
    await assert.rejects(
      authenticateOAuthClient(jwtForm(token, { client_id: 'acme' }), CALL, s.deps),
      refused('invalid_client', 'client-id-mismatch'),
    );
  });
});

describe('limits shared with the contract’s operation', () => {
  test('wrong secrets put the (client, address) pair in back-off, whatever the method', async (t) => {
    const s = await setup(t, { failedSecretBackoff: { enabled: true, freeFailures: 0 } });
    const authorization = basic('acme', 'wrong');
    await assert.rejects(
      authenticateOAuthClient(new Map(), { ...CALL, authorization }, s.deps),
      refused('invalid_client', 'bad-secret', authorization),
    );
    await assert.rejects(
      authenticateOAuthClient(
        new Map([
          ['client_id', 'acme'],
          ['client_secret', SECRET],
        ]),
        CALL,
        s.deps,
      ),
      (err: unknown) => err instanceof PortariaError && err.status === 429,
    );
    // The same back-off the contract's operation reads.
    const pair = await s.limiter.checkPair('acme', '192.0.2.1');
    assert.ok(pair.waitMs > 0);
  });
});

describe('no client enumeration (docs/security.md)', () => {
  /** Counts the signature checks WebCrypto performs (jose verifies through it). */
  function countSignatureChecks(t: TestContext): { readonly count: number } {
    const counter = { count: 0 };
    type Verify = (...args: unknown[]) => Promise<boolean>;
    const subtle = Object.getPrototypeOf(globalThis.crypto.subtle) as { verify: Verify };
    const original = subtle.verify;
    subtle.verify = function (this: unknown, ...args: unknown[]) {
      counter.count++;
      return original.apply(this, args);
    };
    t.after(() => {
      subtle.verify = original;
    });
    return counter;
  }

  async function refusal(s: Setup, form: Map<string, string>) {
    try {
      await authenticateOAuthClient(form, CALL, s.deps);
    } catch (error) {
      assert.ok(error instanceof OAuthError, String(error));
      return { status: error.status, body: oauthErrorJson(error), headers: headersOf(error) };
    }
    return assert.fail('accepted');
  }

  test('every refused credential gets the same status, headers and body', async (t) => {
    const s = await setup(t);
    const forms: Record<string, Map<string, string>> = {
      'a forged assertion of a private_key_jwt client': jwtForm(
        await assertion(s, {}, {}, ecKey('k1')),
      ),
      'an assertion of an unknown client': jwtForm(
        await assertion(s, { iss: 'nobody', sub: 'nobody' }),
      ),
      'an assertion of a secret-only client': jwtForm(
        await assertion(s, { iss: 'acme', sub: 'acme' }),
      ),
      'an assertion under an unknown kid': jwtForm(await assertion(s, {}, { kid: 'k9' })),
      'a wrong secret': new Map([
        ['client_id', 'acme'],
        ['client_secret', 'wrong'],
      ]),
      'an unknown client’s secret': new Map([
        ['client_id', 'nobody'],
        ['client_secret', SECRET],
      ]),
      'a secret for a private_key_jwt client': new Map([
        ['client_id', 'signer'],
        ['client_secret', SECRET],
      ]),
    };
    const answers = new Map<string, unknown>();
    for (const [name, form] of Object.entries(forms)) answers.set(name, await refusal(s, form));
    const expected = {
      status: 401,
      body: JSON.stringify({
        error: 'invalid_client',
        error_description: 'The client credentials were not accepted.',
      }),
      headers: { 'cache-control': 'no-store', pragma: 'no-cache' },
    };
    for (const [name, answer] of answers) assert.deepEqual(answer, expected, name);
  });

  test('an unknown client’s assertion costs a signature check, as a forged one of a real client', async (t) => {
    const s = await setup(t);
    const checks = countSignatureChecks(t);
    const cases: Record<string, Promise<string>> = {
      'a forged assertion of a private_key_jwt client': assertion(s, {}, {}, ecKey('k1')),
      'an unknown client': assertion(s, { iss: 'nobody', sub: 'nobody' }),
      'a secret-only client': assertion(s, { iss: 'acme', sub: 'acme' }),
      'an unknown kid': assertion(s, {}, { kid: 'k9' }),
      'another alg than the pinned one': assertion(
        s,
        {},
        { alg: 'ES384' },
        { ...s.key, privateKey: newKeyPair('ec', { namedCurve: 'P-384' }).privateKey },
      ),
    };
    for (const [name, token] of Object.entries(cases)) {
      const before = checks.count;
      await refusal(s, jwtForm(await token));
      assert.equal(checks.count - before, 1, name);
    }
  });
});
