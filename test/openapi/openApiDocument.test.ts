import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { compileErrors, dereference, validate } from '@readme/openapi-parser';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { readCommittedOpenApi, renderOpenApi } from '../../scripts/writeOpenApi.js';
import { openApiDocument, openApiDocumentFor } from '../../src/documents/openApiDocument.js';
import { SCHEDULE_FILE } from '../../src/keys/keySchedule.js';
import { ManualClock } from '../../src/lib/clock.js';
import { CLIENT_ID, CLIENT_SECRET, startGateway, TOKEN_PATH } from '../helpers/fixture.js';
import { sample, scrape } from '../helpers/metrics.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { onlyResponse } from '../helpers/rawResponse.js';

type Json = Record<string, unknown>;

/** A private copy: the parser dereferences in place, the served document must not change. */
function documentCopy(): Json {
  return structuredClone(openApiDocument) as unknown as Json;
}

/** RFC 3339 §5.6 date-time, with real calendar and clock ranges. */
function isDateTime(value: string): boolean {
  const m =
    /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.\d+)?(?:[Zz]|[+-](\d\d):(\d\d))$/.exec(
      value,
    );
  if (m === null) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as number[];
  const daysInMonth = new Date(Date.UTC(year as number, month as number, 0)).getUTCDate();
  const offsetOk = m[7] === undefined || (Number(m[7]) <= 23 && Number(m[8]) <= 59);
  return (
    (month as number) >= 1 &&
    (month as number) <= 12 &&
    (day as number) >= 1 &&
    (day as number) <= daysInMonth &&
    (hour as number) <= 23 &&
    (minute as number) <= 59 &&
    (second as number) <= 60 &&
    offsetOk
  );
}

function isInt32(value: number): boolean {
  return Number.isInteger(value) && value >= -(2 ** 31) && value <= 2 ** 31 - 1;
}

function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  ajv.addFormat('date-time', { type: 'string', validate: isDateTime });
  ajv.addFormat('int32', { type: 'number', validate: isInt32 });
  return ajv;
}

interface ResponseSpec {
  description: string;
  headers?: Record<string, { schema: object; required?: boolean }>;
  content?: Record<string, { schema?: object }>;
}

interface Contract {
  token: Record<string, ResponseSpec>;
  jwks: Record<string, ResponseSpec>;
  schema(name: string): ValidateFunction;
}

/** The dereferenced document's pieces the response checks need, compiled once. */
async function contract(): Promise<Contract> {
  const doc = (await dereference(documentCopy() as never)) as unknown as {
    paths: Record<string, Record<string, { responses: Record<string, ResponseSpec> }>>;
    components: { schemas: Record<string, object> };
  };
  const ajv = newAjv();
  const compiled = new Map<string, ValidateFunction>();
  return {
    token: doc.paths[TOKEN_PATH]?.post?.responses ?? {},
    jwks: doc.paths['/.well-known/jwks.json']?.get?.responses ?? {},
    schema(name) {
      let fn = compiled.get(name);
      if (fn === undefined) {
        const schema = doc.components.schemas[name];
        assert.ok(schema, `no schema ${name}`);
        fn = ajv.compile(schema);
        compiled.set(name, fn);
      }
      return fn;
    },
  };
}

/** Asserts a real response matches what the document declares for its status. */
async function assertConforms(
  responses: Record<string, ResponseSpec>,
  res: Response,
  ajv: Ajv2020,
): Promise<unknown> {
  const declared = responses[String(res.status)];
  assert.ok(declared, `status ${res.status} is not declared`);
  const mediaType = res.headers.get('content-type') ?? '';
  const content = declared.content?.[mediaType];
  assert.ok(content?.schema, `${res.status}: media type ${mediaType} is not declared`);
  const body: unknown = await res.json();
  const check = ajv.compile(content.schema);
  assert.ok(check(body), `${res.status} body: ${ajv.errorsText(check.errors)}`);
  // A header is optional unless declared `required` (OpenAPI 3.1 Header Object); when
  // present it must match its schema.
  for (const [name, header] of Object.entries(declared.headers ?? {})) {
    const value = res.headers.get(name);
    if (value === null && header.required !== true) continue;
    const checkHeader = ajv.compile(header.schema);
    assert.ok(checkHeader(value), `${res.status} header ${name}: ${value}`);
  }
  return body;
}

function postToken(url: string, body: string | Uint8Array, headers: Record<string, string> = {}) {
  return fetch(url + TOKEN_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
}

const credentials = JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });

describe('OpenAPI description', () => {
  test('the committed openapi.json equals the generated document', async () => {
    assert.equal(
      await readCommittedOpenApi(),
      renderOpenApi(),
      'openapi.json is out of date: run `npm run openapi` and commit the result',
    );
  });

  test('the document is valid OpenAPI 3.1 with no warnings', async () => {
    const result = await validate(documentCopy() as never);
    assert.equal(result.valid, true, result.valid ? '' : compileErrors(result));
    assert.equal(result.specification, 'OpenAPI');
    assert.deepEqual(result.warnings, []);
    assert.equal(openApiDocument.openapi, '3.1.0');
  });

  test('the document carries version 1.0 and an open generateAccessToken operation', () => {
    const operation = openApiDocument.paths[TOKEN_PATH].post;
    assert.equal(openApiDocument.info.version, '1.0');
    assert.equal(operation.operationId, 'generateAccessToken');
    assert.deepEqual(operation.security, []);
    assert.deepEqual(operation.tags, ['authentication']);
    assert.deepEqual(openApiDocument.security, [{ bearerAuth: [] }]);
    const { type, scheme, bearerFormat } = openApiDocument.components.securitySchemes.bearerAuth;
    assert.deepEqual(
      { type, scheme, bearerFormat },
      { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
    );
    assert.deepEqual(Object.keys(operation.requestBody.content), ['application/json']);
  });

  test('the OAuth 2.0 operations stand under their own tag, beside the contract operation', () => {
    const tagged = Object.entries(openApiDocument.paths).flatMap(([path, item]) =>
      Object.values(item as Record<string, { operationId: string; tags: readonly string[] }>)
        .filter((operation) => operation.tags.includes('OAuth 2.0'))
        .map((operation) => `${path} ${operation.operationId}`),
    );
    assert.deepEqual(tagged, [
      '/oauth2/token oauthToken',
      '/oauth2/revoke oauthRevoke',
      '/oauth2/introspect oauthIntrospect',
      '/.well-known/oauth-authorization-server oauthAuthorizationServerMetadata',
      '/.well-known/oauth-protected-resource oauthProtectedResourceMetadata',
    ]);
    assert.deepEqual(openApiDocument.paths[TOKEN_PATH].post.tags, ['authentication']);
  });

  test('a gateway serves the OAuth operations at its configured paths, or none when off', () => {
    const moved = openApiDocumentFor('reference', {
      tokenPath: '/auth/token',
      revocationPath: '/auth/revoke',
      introspectionPath: '/auth/introspect',
    });
    const paths = Object.keys(moved.paths);
    assert.ok(paths.includes('/auth/token') && paths.includes('/auth/introspect'));
    assert.ok(!paths.includes('/oauth2/token'));
    assert.equal(
      (moved.paths as Record<string, { post?: { operationId: string } }>)['/auth/revoke']?.post
        ?.operationId,
      'oauthRevoke',
    );
    const off = Object.keys(openApiDocumentFor('reference', null).paths);
    assert.deepEqual(off, [TOKEN_PATH, '/.well-known/jwks.json', '/v1/openapi.json']);
  });

  test('GET /v1/openapi.json serves exactly the document, without a token', async (t) => {
    const gw = await startGateway(t);
    const res = await fetch(`${gw.url}/v1/openapi.json`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.headers.get('cache-control'), 'public, max-age=3600');
    const served = (await res.json()) as Json;
    // The committed document with the one result shape this gateway emits.
    const expected = JSON.parse(renderOpenApi()) as Json;
    const ok = (doc: Json) =>
      (doc as { paths: Record<string, { post: { responses: Record<string, Json> } }> }).paths[
        TOKEN_PATH
      ]?.post.responses['200'] as { content: { 'application/json': { schema: unknown } } };
    ok(expected).content['application/json'].schema = { $ref: '#/components/schemas/TokenResult' };
    assert.deepEqual(served, expected);
    assert.equal(gw.upstream.received.length, 0);
  });

  test('a gateway emitting the guide fields serves a document naming that shape', async (t) => {
    const gw = await startGateway(t, { settings: () => ({ token: { responseFields: 'guide' } }) });
    const served = (await (await fetch(`${gw.url}/v1/openapi.json`)).json()) as {
      paths: Record<string, { post: { responses: Record<string, { content: Json }> } }>;
    };
    assert.deepEqual(served.paths[TOKEN_PATH]?.post.responses['200']?.content, {
      'application/json': { schema: { $ref: '#/components/schemas/TokenResultGuide' } },
    });
    // The committed document offers both.
    assert.match(renderOpenApi(), /"oneOf": \[/);
  });

  test('a token result with the reference fields matches TokenResult only', async (t) => {
    const [gw, doc] = await Promise.all([startGateway(t), contract()]);
    const res = await postToken(gw.url, credentials);
    assert.equal(res.status, 200);
    const body = await assertConforms(doc.token, res, newAjv());
    assert.equal(doc.schema('TokenResult')(body), true);
    assert.equal(doc.schema('TokenResultGuide')(body), false);
  });

  test('a token result with the guide fields matches TokenResultGuide only', async (t) => {
    const [gw, doc] = await Promise.all([
      startGateway(t, { settings: () => ({ token: { responseFields: 'guide' } }) }),
      contract(),
    ]);
    const res = await postToken(gw.url, credentials);
    assert.equal(res.status, 200);
    const body = await assertConforms(doc.token, res, newAjv());
    assert.equal(doc.schema('TokenResultGuide')(body), true);
    assert.equal(doc.schema('TokenResult')(body), false);
  });

  test('the public key set matches the Jwks schema', async (t) => {
    const [gw, doc] = await Promise.all([startGateway(t), contract()]);
    const res = await fetch(`${gw.url}/.well-known/jwks.json`);
    assert.equal(res.status, 200);
    const body = (await assertConforms(doc.jwks, res, newAjv())) as { keys: Json[] };
    assert.equal(body.keys.length, 1);
    assert.equal(body.keys[0]?.kid, gw.keyRing.signingKey.kid);
  });

  test('every problem the token path emits is declared and matches ProblemDetails', async (t) => {
    const [gw, doc] = await Promise.all([
      startGateway(t, {
        settings: () => ({
          token: { bodyLimitBytes: 1024 },
          tokenLimits: {
            perAddress: { enabled: false },
            perClient: { ratePerSecond: 0.001, burst: 1 },
            failedSecretBackoff: { enabled: false },
          },
        }),
      }),
      contract(),
    ]);
    const cases: [string, () => Promise<Response>, number][] = [
      ['a missing field', () => postToken(gw.url, '{"clientId":"acme"}'), 400],
      ['a body that is not JSON', () => postToken(gw.url, '{'), 400],
      [
        'a body that is not UTF-8',
        () => postToken(gw.url, new Uint8Array([0x22, 0xff, 0x22])),
        400,
      ],
      [
        'a wrong secret',
        () => postToken(gw.url, JSON.stringify({ clientId: CLIENT_ID, clientSecret: 'no' })),
        401,
      ],
      ['an unknown client', () => postToken(gw.url, '{"clientId":"x","clientSecret":"y"}'), 401],
      ['GET', () => fetch(gw.url + TOKEN_PATH), 405],
      ['DELETE', () => fetch(gw.url + TOKEN_PATH, { method: 'DELETE' }), 405],
      [
        'a body over the limit',
        () => postToken(gw.url, JSON.stringify({ x: 'y'.repeat(2000) })),
        413,
      ],
      [
        'a client over its rate limit',
        async () => {
          const busy = '{"clientId":"busy","clientSecret":"y"}';
          await (await postToken(gw.url, busy)).arrayBuffer();
          return postToken(gw.url, busy);
        },
        429,
      ],
      ['text/plain', () => postToken(gw.url, credentials, { 'content-type': 'text/plain' }), 415],
      ['a gzip body', () => postToken(gw.url, credentials, { 'content-encoding': 'gzip' }), 415],
      [
        'a gzip transfer coding',
        async () => {
          const { host } = new URL(gw.url);
          const raw = onlyResponse(
            await rawRequest(
              gw.url,
              `POST ${TOKEN_PATH} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
                'Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
            ),
          );
          return new Response(raw.body, {
            status: raw.status,
            headers: [...raw.headers].map(([name, values]) => [name, values.join(', ')]),
          });
        },
        501,
      ],
    ];
    const ajv = newAjv();
    const emitted = new Set<string>();
    for (const [name, send, status] of cases) {
      const res = await send();
      assert.equal(res.status, status, name);
      assert.equal(res.headers.get('content-type'), 'application/problem+json', name);
      const body = (await assertConforms(doc.token, res, ajv)) as Json;
      assert.equal(doc.schema('ProblemDetails')(body), true, name);
      assert.equal(body.status, status, name);
      emitted.add(String(status));
    }
    assert.deepEqual([...emitted].sort(), ['400', '401', '405', '413', '415', '429', '501']);
    // The declared responses are exactly these, the success and the bodiless 500.
    assert.deepEqual(Object.keys(openApiDocument.paths[TOKEN_PATH].post.responses).sort(), [
      '200',
      '400',
      '401',
      '405',
      '408',
      '413',
      '415',
      '429',
      '431',
      '500',
      '501',
      '503',
    ]);
    assert.equal(doc.token['500']?.content, undefined);
  });

  test('with no signing key active the token path answers the declared 503 problem', async (t) => {
    const T0 = Date.UTC(2026, 5, 1, 12);
    const clock = new ManualClock(T0);
    const [gw, doc] = await Promise.all([
      startGateway(t, { clock, settings: () => ({ reload: { enabled: false } }) }),
      contract(),
    ]);
    const jwks = (await (await fetch(`${gw.url}/.well-known/jwks.json`)).json()) as {
      keys: { kid: string }[];
    };
    const kid = jwks.keys[0]?.kid as string;
    // The only key retires one second from now, with no successor scheduled.
    const at = (ms: number) => new Date(ms).toISOString();
    await writeFile(
      join(gw.config.keys.dir, SCHEDULE_FILE),
      JSON.stringify({
        keys: {
          [kid]: {
            publishAt: at(T0 - 3_600_000),
            activateAt: at(T0 - 3_600_000),
            retireAt: at(T0 + 1000),
            removeAt: null,
          },
        },
      }),
    );
    await gw.app.reload();
    assert.equal((await postToken(gw.url, credentials)).status, 200);
    clock.set(T0 + 2000);
    const res = await postToken(gw.url, credentials);
    assert.equal(res.status, 503);
    const body = (await assertConforms(doc.token, res, newAjv())) as Json;
    assert.equal(body.tipo, 'urn:portaria:problem:service-unavailable');
    const metrics = await scrape(gw.adminUrl);
    assert.equal(sample(metrics, 'portaria_token_requests_total{outcome="unavailable"}'), 1);
  });

  test('the date-time and int32 checks used above refuse what they must', () => {
    const ajv = newAjv();
    const check = ajv.compile({
      type: 'object',
      properties: {
        at: { type: 'string', format: 'date-time' },
        n: { type: 'integer', format: 'int32' },
      },
    });
    const cases: [Json, boolean][] = [
      [{ at: '2026-01-01T00:00:00.000Z', n: 3600 }, true],
      [{ at: '2024-02-29T23:59:60+02:00' }, true],
      [{ at: '2026-02-29T00:00:00Z' }, false],
      [{ at: '2026-13-01T00:00:00Z' }, false],
      [{ at: '2026-01-01 00:00:00Z' }, false],
      [{ at: '2026-01-01T00:00:00' }, false],
      [{ n: 2 ** 31 }, false],
      [{ n: -(2 ** 31) }, true],
    ];
    for (const [value, valid] of cases) assert.equal(check(value), valid, JSON.stringify(value));
  });
});
