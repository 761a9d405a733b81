/**
 * The HTTP side of the revocation and introspection endpoints (`src/oauth/` holds their
 * steps): hands a step list the request's method, media type, `Authorization`, source
 * address and bounded body, writes its answer (never cached) or its RFC 6749 §5.2 error,
 * and counts the outcome. HTTP-level refusals (405, 413, 415, 429, 503) are thrown on as
 * problem details. These paths are never forwarded upstream.
 */
import type { IncomingMessage } from 'node:http';
import type { FailureReason } from '../errors.js';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import type { OAuthFormCall } from '../oauth/authenticatedForm.js';
import { isOAuthError, NO_STORE } from '../oauth/oauthError.js';
import { sendOAuthError } from './oauthReplies.js';
import { BodyTooLarge, readBoundedBody } from './readBoundedBody.js';
import { sendJson } from './replies.js';
import { continueBody, type GatewayResponse } from './requestScope.js';
import { outcomeOf } from './tokenRoute.js';

/** An endpoint's steps. `body` null: an empty 200; `outcome`: the metric's label. */
export type OAuthFormSteps = (call: OAuthFormCall) => Promise<{
  readonly clientId: string;
  readonly body: string | null;
  readonly outcome: string;
}>;

export interface OAuthFormRouteDeps {
  readonly bodyLimitBytes: number;
  readonly trustedProxies: TrustedProxies;
  readonly onOutcome: (outcome: string) => void;
  /** A 401 (invalid_client), by private reason. */
  readonly onAuthFailure?: (reason: FailureReason) => void;
}

/** Resolves when the response is written; throws PortariaError for HTTP-level refusals. */
export async function handleOAuthFormRequest(
  req: IncomingMessage,
  res: GatewayResponse,
  steps: OAuthFormSteps,
  deps: OAuthFormRouteDeps,
): Promise<void> {
  try {
    const result = await steps(oauthFormCall(req, res, deps));
    res.scope.clientId = result.clientId;
    deps.onOutcome(result.outcome);
    if (result.body !== null) {
      sendJson(res, 200, result.body, NO_STORE);
      return;
    }
    res.statusCode = 200;
    res.setHeader('content-length', 0);
    for (const [name, value] of Object.entries(NO_STORE)) res.setHeader(name, value);
    res.end();
  } catch (error) {
    answerOAuthFailure(req, res, error, deps);
  }
}

/** What an OAuth endpoint's steps read of the request (and its trace's step spans). */
export function oauthFormCall(
  req: IncomingMessage,
  res: GatewayResponse,
  deps: OAuthFormRouteDeps,
): OAuthFormCall {
  const trace = res.scope.trace;
  return {
    method: req.method,
    contentType: req.headers['content-type'],
    authorization: req.headers.authorization,
    authorizationLines: res.scope.authorizationLines,
    clientAddress: deps.trustedProxies.clientAddress(req),
    // A pending `100 Continue` goes out once the declared length passed.
    readBody: () => readBoundedBody(req, deps.bodyLimitBytes, () => continueBody(res)),
    // Spans for client authentication and signing, as the contract's operation has.
    ...(trace === null ? {} : { steps: (step: string) => trace.step(step) }),
  };
}

/**
 * Counts a failed OAuth request and answers an RFC 6749 §5.2 error; rethrows anything
 * else (HTTP-level refusals become problem details upstream of here).
 */
export function answerOAuthFailure(
  req: IncomingMessage,
  res: GatewayResponse,
  error: unknown,
  deps: OAuthFormRouteDeps,
): void {
  if (isOAuthError(error)) {
    deps.onOutcome(error.error);
    if (error.status === 401) deps.onAuthFailure?.(error.reason);
    sendOAuthError(req, res, error);
    return;
  }
  deps.onOutcome(outcomeOf(error));
  if (error instanceof BodyTooLarge) res.setHeader('connection', 'close');
  throw error;
}
