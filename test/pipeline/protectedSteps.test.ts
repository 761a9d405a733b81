/**
 * The protected steps on their own: the list run by the runner over a plain
 * `AccessRequest` object (no HTTP request, no socket), with a real verifier (tokens
 * signed with a real key, our key ring, the in-memory revocation store, the
 * verified-token cache and a manual clock) and a real compiled route table. Each
 * refusal is named by its code and private reason; what the steps fill is read back
 * from the value.
 */
import assert from 'node:assert/strict';
import { after, before, describe, type TestContext, test } from 'node:test';
import type { RouteConfig } from '../../src/config/types.js';
import {
  type CertificateVerdict,
  type ClientCertificate,
  certificateThumbprint,
  clientCertificate,
} from '../../src/domain/clientCertificate.js';
import { parseRequestTarget } from '../../src/domain/requestPath.js';
import { PortariaError } from '../../src/errors.js';
import { KeyRing } from '../../src/keys/keyRing.js';
import { epochSeconds, ManualClock } from '../../src/lib/clock.js';
import type { MethodClass } from '../../src/observability/metrics.js';
import type { AccessRequest } from '../../src/pipeline/accessRequest.js';
import { type ProtectedStepsDeps, protectedSteps } from '../../src/pipeline/protectedSteps.js';
import { runSteps } from '../../src/pipeline/runSteps.js';
import { compileRouteTable } from '../../src/proxy/routeTable.js';
import { MemoryRevocationStore } from '../../src/revocation/memoryRevocationStore.js';
import { TokenVerifier } from '../../src/verify/tokenVerifier.js';
import { buildIssuerTable } from '../../src/verify/trustedIssuer.js';
import { VerifiedTokenCache } from '../../src/verify/verifiedTokenCache.js';
import { selfSigned } from '../helpers/certificates.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { tempDir } from '../helpers/process.js';
import { signWith } from '../helpers/tokens.js';

const ISSUER = 'https://portaria.test';
const AUDIENCE = 'partner-api';
const T0 = Date.UTC(2026, 0, 1);
const KEY = newKeyPair('ec', { namedCurve: 'P-256' });

function route(
  id: string,
  prefix: string,
  scopes: string[],
  audience: string | null = null,
): RouteConfig {
  return { id, prefix, upstream: 'http://127.0.0.1:9', scopes, timeoutMs: 1000, audience };
}

const ROUTES = compileRouteTable({
  routes: [
    route('orders', '/v1/orders', ['orders:read']),
    route('payments', '/v1/payments', ['payments:write']),
    route('ledger', '/v1/ledger', [], 'https://ledger.test'),
    { ...route('bound', '/v1/bound', []), requireCertificateBound: true },
  ],
  upstream: { default: null, timeoutMs: 30_000, connections: 8 },
});

interface Harness {
  readonly clock: ManualClock;
  readonly revocation: MemoryRevocationStore;
  readonly deps: ProtectedStepsDeps;
  readonly staleRefusals: MethodClass[];
  /** Full (uncached) verifications so far. */
  verifications(): number;
  stale: boolean;
}

function harness(refuse: Partial<Record<MethodClass, boolean>> | null = null): Harness {
  const clock = new ManualClock(T0);
  const ring = new KeyRing(
    [{ kid: 'k1', alg: 'ES256', privateKey: KEY.privateKey }],
    new Map(),
    'ES256',
    clock,
  );
  const revocation = new MemoryRevocationStore(clock);
  let verifications = 0;
  const verifier = new TokenVerifier({
    issuers: buildIssuerTable(
      { issuer: ISSUER, audience: AUDIENCE, clockSkewSeconds: 60 },
      () => ring,
      [],
      'any',
    ),
    clock,
    cache: new VerifiedTokenCache(100, clock),
    revocation,
    hooks: { verified: () => verifications++ },
  });
  const staleRefusals: MethodClass[] = [];
  const h: Harness = {
    clock,
    revocation,
    staleRefusals,
    verifications: () => verifications,
    stale: false,
    deps: {
      verifier,
      ownAudience: AUDIENCE,
      routes: () => ROUTES,
      onStaleRefusal: (kind) => staleRefusals.push(kind),
      ...(refuse === null
        ? {}
        : {
            revocationFreshness: {
              isStale: () => h.stale,
              refuse: { safe: refuse.safe === true, unsafe: refuse.unsafe === true },
            },
          }),
    },
  };
  return h;
}

function token(h: Harness, overrides: Record<string, unknown> = {}): Promise<string> {
  const now = epochSeconds(h.clock);
  return signWith(
    KEY.privateKey,
    'ES256',
    {
      iss: ISSUER,
      sub: 'acme',
      client_id: 'acme',
      aud: AUDIENCE,
      iat: now,
      exp: now + 600,
      jti: 'token-1',
      scope: 'orders:read',
      ...overrides,
    },
    { kid: 'k1' },
  );
}

/** The plain value an entry builds: nothing but data. */
function request(
  target: string,
  authorization: string | undefined,
  options: {
    method?: string;
    methodClass?: MethodClass;
    lines?: number;
    certificate?: ClientCertificate;
    dpopProof?: string;
  } = {},
): AccessRequest {
  return {
    method: options.method ?? 'GET',
    methodClass: options.methodClass ?? 'safe',
    target: parseRequestTarget(target),
    authorization,
    authorizationLines: options.lines ?? (authorization === undefined ? 0 : 1),
    trace: null,
    certificate: options.certificate ?? null,
    dpopProof: options.dpopProof,
    dpopProofLines: options.dpopProof === undefined ? 0 : 1,
    origin: 'https://api.example.com',
    secondAsk: false,
    scheme: undefined,
    token: '',
    principal: null,
    bound: false,
    proven: false,
    proofSpent: false,
    clientId: undefined,
    route: null,
    routeId: 'unmatched',
    quota: null,
  };
}

/** Runs the list; `admitted`, or `refused <code> <reason>`. */
async function outcome(h: Harness, value: AccessRequest): Promise<string> {
  try {
    await runSteps(protectedSteps(h.deps), value);
    return 'admitted';
  } catch (error) {
    assert.ok(error instanceof PortariaError, String(error));
    return `refused ${error.code} ${error.reason}`;
  }
}

describe('the protected steps', () => {
  test('are, in order: credentials, verification, certificate binding, dpop proof, route, route found, audience, binding required, scopes', () => {
    const names = protectedSteps(harness().deps).map((step) => step.name);
    assert.deepEqual(names, [
      'credentials',
      'verification',
      'certificate binding',
      'dpop proof',
      'route',
      'route found',
      'audience',
      'binding required',
      'scopes',
    ]);
  });

  test('with a freshness policy that refuses, the freshness step runs after the route', () => {
    const names = protectedSteps(harness({ unsafe: true }).deps).map((step) => step.name);
    assert.deepEqual(names.slice(4, 6), ['route', 'freshness']);
  });

  test('a valid token on its route is admitted, and the value holds what each step found', async () => {
    const h = harness();
    const jwt = await token(h);
    const value = request('/v1/orders/7?x=1', `Bearer ${jwt}`);
    assert.equal(await outcome(h, value), 'admitted');
    assert.equal(value.scheme, 'bearer');
    assert.equal(value.token, jwt);
    assert.equal(value.principal?.clientId, 'acme');
    assert.equal(value.clientId, 'acme');
    assert.equal(value.route?.id, 'orders');
    assert.equal(value.routeId, 'orders');
  });

  test('a cached token passes the whole list synchronously (no promise, no tick)', async () => {
    const h = harness();
    const jwt = await token(h);
    // The first request verifies in full: it waits.
    const first = runSteps(protectedSteps(h.deps), request('/v1/orders', `Bearer ${jwt}`));
    assert.ok(first instanceof Promise);
    await first;
    const second = request('/v1/orders', `Bearer ${jwt}`);
    assert.equal(runSteps(protectedSteps(h.deps), second), undefined);
    assert.equal(second.principal?.clientId, 'acme');
    assert.equal(h.verifications(), 1);
  });

  test('a token revoked after it was cached is refused on its next request', async () => {
    const h = harness();
    const jwt = await token(h);
    assert.equal(await outcome(h, request('/v1/orders', `Bearer ${jwt}`)), 'admitted');
    await h.revocation.revokeToken('token-1', epochSeconds(h.clock) + 600);
    assert.equal(
      await outcome(h, request('/v1/orders', `Bearer ${jwt}`)),
      'refused token-revoked revoked',
    );
  });

  const refusals: [string, (jwt: string) => AccessRequest, string][] = [
    ['no Authorization', () => request('/v1/orders', undefined), 'token-missing no-authorization'],
    [
      'another scheme',
      () => request('/v1/orders', 'Basic YWNtZTpzZWNyZXQ='),
      'token-missing other-scheme',
    ],
    [
      'two Authorization lines',
      (jwt) => request('/v1/orders', `Bearer ${jwt}`, { lines: 2 }),
      'token-invalid multiple-authorization',
    ],
    [
      'a token in the query too',
      (jwt) => request('/v1/orders?access_token=x', `Bearer ${jwt}`),
      'token-invalid token-in-query',
    ],
    [
      'a token that is no JWS',
      () => request('/v1/orders', 'Bearer abc'),
      'token-invalid malformed',
    ],
    [
      'a path no route serves',
      (jwt) => request('/v2/other', `Bearer ${jwt}`),
      'not-found no-route',
    ],
    [
      'a route whose scope the token lacks',
      (jwt) => request('/v1/payments', `Bearer ${jwt}`),
      'insufficient-scope insufficient-scope',
    ],
    [
      'a route whose audience the token lacks',
      (jwt) => request('/v1/ledger', `Bearer ${jwt}`),
      'token-invalid audience-not-allowed',
    ],
  ];
  for (const [name, make, expected] of refusals) {
    test(`${name} → ${expected}`, async () => {
      const h = harness();
      assert.equal(await outcome(h, make(await token(h))), `refused ${expected}`);
    });
  }

  test('a refusal after the route step leaves the route in the value (logged under it)', async () => {
    const h = harness();
    const value = request('/v1/payments', `Bearer ${await token(h)}`);
    assert.equal(await outcome(h, value), 'refused insufficient-scope insufficient-scope');
    assert.equal(value.routeId, 'payments');
  });

  test('strangers learn nothing of the routes: no token on an unknown path is a 401', async () => {
    const h = harness();
    const value = request('/v2/other', undefined);
    assert.equal(await outcome(h, value), 'refused token-missing no-authorization');
    assert.equal(value.route, null);
  });

  test('our own token for another resource is refused on a route naming no audience (RFC 8707)', async () => {
    const h = harness();
    const jwt = await token(h, { aud: 'https://ledger.test' });
    assert.equal(
      await outcome(h, request('/v1/orders', `Bearer ${jwt}`)),
      'refused token-invalid audience-not-allowed',
    );
    assert.equal(await outcome(h, request('/v1/ledger', `Bearer ${jwt}`)), 'admitted');
  });

  describe('the revocation freshness policy', () => {
    test('a stale list refuses the method class whose policy refuses, counted by class', async () => {
      const h = harness({ unsafe: true });
      h.stale = true;
      const jwt = await token(h);
      const write = request('/v1/orders', `Bearer ${jwt}`, {
        method: 'POST',
        methodClass: 'unsafe',
      });
      assert.equal(await outcome(h, write), 'refused service-unavailable revocation-stale');
      assert.equal(write.routeId, 'orders');
      assert.equal(await outcome(h, request('/v1/orders', `Bearer ${jwt}`)), 'admitted');
      assert.deepEqual(h.staleRefusals, ['unsafe']);
    });

    test('a stale list refuses before the route is found: no route table revealed', async () => {
      const h = harness({ safe: true, unsafe: true });
      h.stale = true;
      const jwt = await token(h);
      assert.equal(
        await outcome(h, request('/v2/other', `Bearer ${jwt}`)),
        'refused service-unavailable revocation-stale',
      );
    });

    test('a fresh list refuses nothing', async () => {
      const h = harness({ safe: true, unsafe: true });
      assert.equal(await outcome(h, request('/v1/orders', `Bearer ${await token(h)}`)), 'admitted');
      assert.deepEqual(h.staleRefusals, []);
    });

    test('a known revocation is a verdict even while the list is stale', async () => {
      const h = harness({ safe: true, unsafe: true });
      h.stale = true;
      await h.revocation.revokeToken('token-1', epochSeconds(h.clock) + 600);
      assert.equal(
        await outcome(h, request('/v1/orders', `Bearer ${await token(h)}`)),
        'refused token-revoked revoked',
      );
    });
  });
});

describe('runSteps', () => {
  test('runs synchronous and waiting steps in order, and stops at the first refusal', async () => {
    const seen: string[] = [];
    const steps = [
      { name: 'a', run: (v: string[]) => void v.push('a') },
      { name: 'b', run: (v: string[]) => Promise.resolve().then(() => void v.push('b')) },
      { name: 'c', run: (v: string[]) => void v.push('c') },
      {
        name: 'd',
        run: () => {
          throw new Error('refused at d');
        },
      },
      { name: 'e', run: (v: string[]) => void v.push('e') },
    ];
    await assert.rejects(async () => runSteps(steps, seen), /refused at d/);
    assert.deepEqual(seen, ['a', 'b', 'c']);
  });

  test('answers undefined when no step waits', () => {
    const seen: string[] = [];
    const steps = [
      { name: 'a', run: (v: string[]) => void v.push('a') },
      { name: 'b', run: (v: string[]) => void v.push('b') },
    ];
    assert.equal(runSteps(steps, seen), undefined);
    assert.deepEqual(seen, ['a', 'b']);
  });
});

describe('the certificate-binding steps (RFC 8705 §3)', () => {
  let partner: Buffer;
  let other: Buffer;
  let cleanup: (() => Promise<void>) | undefined;
  before(async () => {
    const t = { after: (fn: () => Promise<void>) => (cleanup = fn) } as unknown as TestContext;
    const dir = await tempDir(t, 'portaria-binding-');
    partner = (await selfSigned(dir, 'partner', { use: 'client' })).der;
    other = (await selfSigned(dir, 'other', { use: 'client' })).der;
  });
  after(() => cleanup?.());

  const cert = (der: Buffer, verdict: CertificateVerdict = 'verified'): ClientCertificate =>
    clientCertificate(der, 'tls', verdict);
  const bound = (der: Buffer) => ({ cnf: { 'x5t#S256': certificateThumbprint(der) } });

  test('a bound token passes with its certificate, synchronously once cached, and the value says bound', async () => {
    const h = harness();
    const jwt = await token(h, bound(partner));
    const first = request('/v1/orders', `Bearer ${jwt}`, { certificate: cert(partner) });
    assert.equal(await outcome(h, first), 'admitted');
    assert.equal(first.bound, true);
    const second = request('/v1/bound', `Bearer ${jwt}`, { certificate: cert(partner) });
    assert.equal(runSteps(protectedSteps(h.deps), second), undefined);
    assert.equal(second.bound, true);
  });

  test('the binding is checked on every request: a cached bound token with no or another certificate is refused', async () => {
    const h = harness();
    const jwt = await token(h, bound(partner));
    assert.equal(
      await outcome(h, request('/v1/orders', `Bearer ${jwt}`, { certificate: cert(partner) })),
      'admitted',
    );
    assert.equal(
      await outcome(h, request('/v1/orders', `Bearer ${jwt}`)),
      'refused token-binding-failed bound-no-certificate',
    );
    assert.equal(
      await outcome(h, request('/v1/orders', `Bearer ${jwt}`, { certificate: cert(other) })),
      'refused token-binding-failed certificate-mismatch',
    );
    assert.equal(h.verifications(), 1);
  });

  test('its certificate expired, not yet valid or revoked since: refused; untrusted or self-signed: the binding holds', async () => {
    const h = harness();
    const jwt = await token(h, bound(partner));
    for (const verdict of ['expired', 'not-yet-valid', 'revoked'] as const) {
      assert.equal(
        await outcome(
          h,
          request('/v1/orders', `Bearer ${jwt}`, { certificate: cert(partner, verdict) }),
        ),
        'refused token-binding-failed bound-certificate-invalid',
      );
    }
    for (const verdict of ['untrusted', 'self-signed'] as const) {
      assert.equal(
        await outcome(
          h,
          request('/v1/orders', `Bearer ${jwt}`, { certificate: cert(partner, verdict) }),
        ),
        'admitted',
      );
    }
  });

  test('a cnf that is not an object, or an x5t#S256 that is no thumbprint: refused', async () => {
    const h = harness();
    for (const cnf of ['x', ['a'], null, { 'x5t#S256': 'short' }, { 'x5t#S256': 7 }]) {
      const jwt = await token(h, { cnf, jti: `bad-${JSON.stringify(cnf)}` });
      assert.equal(
        await outcome(h, request('/v1/orders', `Bearer ${jwt}`, { certificate: cert(partner) })),
        'refused token-binding-failed bad-cnf',
        JSON.stringify(cnf),
      );
    }
    // Another confirmation method only (DPoP's jkt): no certificate binding to check, but
    // a key-bound token is never a bearer token (DPoP off here: it is refused outright).
    const jkt = await token(h, { cnf: { jkt: 'x'.repeat(43) }, jti: 'jkt' });
    assert.equal(
      await outcome(h, request('/v1/orders', `Bearer ${jkt}`)),
      'refused token-invalid dpop-as-bearer',
    );
  });

  test('a route or an own client requiring bound tokens refuses a bearer one; a bound one passes', async () => {
    const h = harness();
    const bearer = await token(h);
    assert.equal(
      await outcome(h, request('/v1/bound', `Bearer ${bearer}`, { certificate: cert(partner) })),
      'refused token-binding-required not-bound',
    );
    const jwt = await token(h, { ...bound(partner), jti: 'bound-1' });
    assert.equal(
      await outcome(h, request('/v1/bound', `Bearer ${jwt}`, { certificate: cert(partner) })),
      'admitted',
    );
    const strict = harness();
    const byClient: ProtectedStepsDeps = {
      ...strict.deps,
      clientRequiresBinding: (clientId) => clientId === 'acme',
    };
    const run = async (value: AccessRequest) => {
      try {
        await runSteps(protectedSteps(byClient), value);
        return 'admitted';
      } catch (error) {
        return `refused ${(error as PortariaError).code}`;
      }
    };
    assert.equal(
      await run(request('/v1/orders', `Bearer ${await token(strict)}`)),
      'refused token-binding-required',
    );
    assert.equal(
      await run(
        request('/v1/orders', `Bearer ${await token(strict, { ...bound(partner), jti: 'b2' })}`, {
          certificate: cert(partner),
        }),
      ),
      'admitted',
    );
  });
});
