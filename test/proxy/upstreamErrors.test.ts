import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { errors } from 'undici';
import { isPortariaError } from '../../src/errors.js';
import {
  classifyUpstreamError,
  type UpstreamErrorKind,
  upstreamProblem,
} from '../../src/proxy/upstreamErrors.js';

function systemError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 10.1.2.3:8080`), { code, errno: -111 });
}

describe('classifyUpstreamError', () => {
  const cases: ReadonlyArray<readonly [string, unknown, UpstreamErrorKind]> = [
    ['undici HeadersTimeoutError', new errors.HeadersTimeoutError(), 'timeout'],
    ['undici BodyTimeoutError', new errors.BodyTimeoutError(), 'timeout'],
    ['ETIMEDOUT', systemError('ETIMEDOUT'), 'timeout'],
    ['ECONNREFUSED', systemError('ECONNREFUSED'), 'refused'],
    ['ENOTFOUND', systemError('ENOTFOUND'), 'refused'],
    ['EAI_AGAIN', systemError('EAI_AGAIN'), 'refused'],
    ['undici ConnectTimeoutError', new errors.ConnectTimeoutError(), 'refused'],
    ['EHOSTUNREACH', systemError('EHOSTUNREACH'), 'refused'],
    ['ENETUNREACH', systemError('ENETUNREACH'), 'refused'],
    ['ECONNRESET', systemError('ECONNRESET'), 'reset'],
    ['undici SocketError', new errors.SocketError('other side closed'), 'reset'],
    ['EPIPE', systemError('EPIPE'), 'reset'],
    [
      'AggregateError of ECONNREFUSED',
      new AggregateError([systemError('ECONNREFUSED'), systemError('ECONNREFUSED')]),
      'refused',
    ],
    ['cause ECONNRESET', new Error('fetch failed', { cause: systemError('ECONNRESET') }), 'reset'],
    [
      'undici ResponseContentLengthMismatchError',
      new errors.ResponseContentLengthMismatchError(),
      'error',
    ],
    [
      'an HPE parser error',
      Object.assign(new Error('bad'), { code: 'HPE_INVALID_CONSTANT' }),
      'error',
    ],
    ['a plain Error', new Error('boom'), 'error'],
    ['a non-error value', 'boom', 'error'],
    ['null', null, 'error'],
  ];
  for (const [name, error, kind] of cases) {
    test(`${name} is ${kind}`, () => {
      assert.equal(classifyUpstreamError(error), kind);
    });
  }
});

describe('upstreamProblem', () => {
  const cases: ReadonlyArray<readonly [UpstreamErrorKind, string, number, string, string]> = [
    [
      'timeout',
      'upstream-timeout',
      504,
      'upstream-timeout',
      'The upstream service did not answer in time.',
    ],
    [
      'refused',
      'upstream-unavailable',
      502,
      'upstream-refused',
      'The upstream service could not be reached.',
    ],
    [
      'reset',
      'upstream-unavailable',
      502,
      'upstream-reset',
      'The connection to the upstream service was interrupted.',
    ],
    [
      'error',
      'upstream-unavailable',
      502,
      'upstream-error',
      'The upstream service returned an invalid response.',
    ],
  ];
  for (const [kind, code, status, reason, detail] of cases) {
    test(`${kind} becomes ${status} ${code} with reason ${reason}`, () => {
      const cause = systemError('ECONNREFUSED');
      const problem = upstreamProblem(kind, cause);
      assert.ok(isPortariaError(problem));
      assert.equal(problem.code, code);
      assert.equal(problem.status, status);
      assert.equal(problem.reason, reason);
      assert.equal(problem.detail, detail);
      assert.equal(problem.cause, cause);
    });
  }

  test('the public detail never carries the address, errno or stack of the cause', () => {
    const problem = upstreamProblem(classifyUpstreamError(systemError('ECONNREFUSED')));
    assert.doesNotMatch(problem.detail, /10\.1\.2\.3|8080|ECONNREFUSED|-111|\bat\b/);
  });
});
