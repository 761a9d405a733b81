/**
 * Tracing of the OAuth 2.0 token endpoint, against a real OTLP/HTTP receiver: the same
 * children as the contract's operation (client authentication — a `private_key_jwt`
 * assertion's checks included — and signing), with the same attribute rules, and no
 * secret, assertion or token anywhere in the exported bytes.
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { CLIENT_ID, CLIENT_SECRET, type Gateway, startGateway } from '../helpers/fixture.js';
import { ecKey } from '../helpers/jwksServer.js';
import { waitFor } from '../helpers/wait.js';
import {
  KIND,
  type OtlpReceiver,
  type ReceivedSpan,
  STATUS_ERROR,
  startOtlpReceiver,
  withEnv,
} from '../observability/otlpReceiver.js';
import {
  assertionClient,
  assertionForm,
  signedAssertion,
  writeClientKeys,
} from './clientAssertions.js';
import { basic, CLIENTS, INTROSPECT_PATH, postForm, RESOURCE_SERVER } from './formRequests.js';

const OAUTH_TOKEN_PATH = '/oauth2/token';
const SIGNER_KEY = ecKey('trace-signer');
const SIGNER = assertionClient('signer');

async function tracedGateway(t: TestContext): Promise<{ gw: Gateway; receiver: OtlpReceiver }> {
  const receiver = await startOtlpReceiver(t);
  const gw = await withEnv(
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_SAMPLER: 'always_on',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    },
    () =>
      startGateway(t, {
        clients: [...CLIENTS, SIGNER],
        settings: () => ({ tracing: { enabled: true } }),
      }),
  );
  await writeClientKeys(gw, SIGNER.id, SIGNER_KEY);
  return { gw, receiver };
}

const newAssertion = () => signedAssertion(SIGNER.id, SIGNER_KEY);
const withAssertion = assertionForm;

/** The server span of the OAuth token endpoint that answered `status`. */
function tokenEndpointSpan(
  receiver: OtlpReceiver,
  status: number,
  match: (span: ReceivedSpan) => boolean = () => true,
): Promise<ReceivedSpan> {
  return receiver.span(`the oauth-token server span answering ${status}`, (s) => {
    return (
      s.kind === KIND.server &&
      s.attributes['portaria.route.id'] === 'oauth-token' &&
      s.attributes['http.response.status_code'] === status &&
      match(s)
    );
  });
}

function childrenOf(receiver: OtlpReceiver, parent: ReceivedSpan): ReceivedSpan[] {
  return receiver.spans.filter(
    (s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId,
  );
}

async function bothChildren(receiver: OtlpReceiver, parent: ReceivedSpan): Promise<string[]> {
  const found = await waitFor(
    'both steps',
    () => {
      const children = childrenOf(receiver, parent);
      return children.length === 2 ? children : undefined;
    },
    10_000,
  );
  assert.ok(found.every((s) => s.kind === KIND.internal && s.statusCode !== STATUS_ERROR));
  return found.map((s) => s.name).sort();
}

describe('tracing of the OAuth 2.0 token endpoint', () => {
  test('client_secret_basic: client authentication and signing as children of its server span', async (t) => {
    const { gw, receiver } = await tracedGateway(t);
    const res = await postForm(gw, OAUTH_TOKEN_PATH, { grant_type: 'client_credentials' }, basic());
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const issued = await tokenEndpointSpan(receiver, 200);
    assert.equal(issued.name, 'POST oauth-token');
    assert.equal(issued.attributes['portaria.client.id'], CLIENT_ID);
    assert.deepEqual(await bothChildren(receiver, issued), [
      'portaria.token.authenticate_client',
      'portaria.token.sign',
    ]);
  });

  test('private_key_jwt: the assertion checks are the client authentication span; a replay fails it with its reason and signs nothing', async (t) => {
    const { gw, receiver } = await tracedGateway(t);
    const form = withAssertion(await newAssertion());
    const first = await postForm(gw, OAUTH_TOKEN_PATH, form);
    assert.equal(first.status, 200, await first.clone().text());
    await first.arrayBuffer();
    const issued = await tokenEndpointSpan(receiver, 200);
    assert.equal(issued.attributes['portaria.client.id'], SIGNER.id);
    assert.deepEqual(await bothChildren(receiver, issued), [
      'portaria.token.authenticate_client',
      'portaria.token.sign',
    ]);

    const replay = await postForm(gw, OAUTH_TOKEN_PATH, form);
    assert.equal(replay.status, 401);
    await replay.arrayBuffer();
    const refused = await tokenEndpointSpan(receiver, 401);
    assert.equal(
      refused.attributes['portaria.client.id'],
      undefined,
      'an unauthenticated id is not recorded',
    );
    assert.equal(refused.attributes['portaria.outcome.reason'], 'assertion-replayed');
    const auth = await receiver.span(
      'the failed authentication',
      (s) => s.parentSpanId === refused.spanId,
    );
    assert.equal(auth.name, 'portaria.token.authenticate_client');
    assert.equal(auth.statusCode, STATUS_ERROR);
    assert.equal(auth.attributes['portaria.outcome.reason'], 'assertion-replayed');
    assert.equal(childrenOf(receiver, refused).length, 1, 'nothing was signed');
  });

  test('an assertion refused before any key is looked at (alg none) fails the authentication span too', async (t) => {
    const { gw, receiver } = await tracedGateway(t);
    const header = Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url');
    const claims = Buffer.from(
      JSON.stringify({ iss: SIGNER.id, sub: SIGNER.id, aud: 'https://portaria.test/oauth2/token' }),
    ).toString('base64url');
    const res = await postForm(gw, OAUTH_TOKEN_PATH, withAssertion(`${header}.${claims}.x`));
    assert.equal(res.status, 401);
    await res.arrayBuffer();
    const refused = await tokenEndpointSpan(receiver, 401);
    const auth = await receiver.span(
      'the failed authentication',
      (s) => s.parentSpanId === refused.spanId,
    );
    assert.equal(auth.name, 'portaria.token.authenticate_client');
    assert.equal(auth.attributes['portaria.outcome.reason'], 'assertion-alg');
  });

  test('no secret, assertion, Authorization value or token appears anywhere in the exported spans', async (t) => {
    const { gw, receiver } = await tracedGateway(t);
    const grant = { grant_type: 'client_credentials' };
    const viaBasic = await postForm(gw, OAUTH_TOKEN_PATH, grant, basic());
    const { access_token: token } = (await viaBasic.json()) as { access_token: string };
    const wrongBasic = basic(CLIENT_ID, `${CLIENT_SECRET}-wrong`);
    await (await postForm(gw, OAUTH_TOKEN_PATH, grant, wrongBasic)).arrayBuffer();
    const viaPost = { ...grant, client_id: CLIENT_ID, client_secret: CLIENT_SECRET };
    await (await postForm(gw, OAUTH_TOKEN_PATH, viaPost)).arrayBuffer();
    const assertion = await newAssertion();
    const viaJwt = await postForm(gw, OAUTH_TOKEN_PATH, withAssertion(assertion));
    const { access_token: jwtToken } = (await viaJwt.json()) as { access_token: string };
    await (await postForm(gw, OAUTH_TOKEN_PATH, withAssertion(assertion))).arrayBuffer();
    const asResourceServer = basic(RESOURCE_SERVER.id, RESOURCE_SERVER.secret);
    const introspected = await postForm(gw, INTROSPECT_PATH, { token }, asResourceServer);
    assert.equal(introspected.status, 200);
    await introspected.arrayBuffer();
    await gw.app.shutdown();

    const serverSpans = receiver.spans.filter((s) => s.kind === KIND.server);
    assert.equal(serverSpans.length, 6, `server spans exported: ${serverSpans.length}`);
    const exported = receiver.bodies.join('\n');
    const parts = (jwt: string) => jwt.split('.').filter((part) => part.length > 0);
    for (const secret of [
      token,
      ...parts(token),
      jwtToken,
      ...parts(jwtToken),
      assertion,
      ...parts(assertion),
      CLIENT_SECRET,
      RESOURCE_SERVER.secret,
      basic().slice('Basic '.length),
      wrongBasic.slice('Basic '.length),
      asResourceServer.slice('Basic '.length),
      'Basic',
      'client_assertion',
    ]) {
      assert.ok(!exported.includes(secret), `exported spans contain ${secret.slice(0, 12)}…`);
    }
  });
});
