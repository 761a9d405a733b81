/**
 * The HTTP side of the OAuth 2.0 token endpoint (`src/oauth/tokenEndpoint.ts` holds its
 * steps): hands it the method, media type, `Authorization`, source address and bounded
 * body, writes the RFC 6749 §5.1 answer or §5.2 error, and counts the outcome.
 */
import type { IncomingMessage } from 'node:http';
import type { FailureReason } from '../errors.js';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import { isOAuthError, NO_STORE } from '../oauth/oauthError.js';
import { type OAuthTokenDeps, runOAuthTokenRequest } from '../oauth/tokenEndpoint.js';
import { sendOAuthError } from './oauthReplies.js';
import { BodyTooLarge, readBoundedBody } from './readBoundedBody.js';
import { sendJson } from './replies.js';
import { continueBody, type GatewayResponse } from './requestScope.js';
import { outcomeOf } from './tokenRoute.js';

export interface OAuthTokenRouteDeps extends OAuthTokenDeps {
  readonly bodyLimitBytes: number;
  readonly trustedProxies: TrustedProxies;
  readonly onOutcome: (outcome: string) => void;
  /** A token was issued to `clientId`. */
  readonly onIssued?: (clientId: string) => void;
  /** A 401 (invalid_client), by private reason. */
  readonly onAuthFailure?: (reason: FailureReason) => void;
}

/** Resolves when the response is written; throws PortariaError for HTTP-level refusals. */
export async function handleOAuthTokenRequest(
  req: IncomingMessage,
  res: GatewayResponse,
  deps: OAuthTokenRouteDeps,
): Promise<void> {
  try {
    const result = await runOAuthTokenRequest(
      {
        method: req.method,
        contentType: req.headers['content-type'],
        authorization: req.headers.authorization,
        authorizationLines: res.scope.authorizationLines,
        clientAddress: deps.trustedProxies.clientAddress(req),
        readBody: () => readBoundedBody(req, deps.bodyLimitBytes, () => continueBody(res)),
      },
      deps,
    );
    res.scope.clientId = result.clientId;
    sendJson(res, 200, result.body, NO_STORE);
    deps.onOutcome('issued');
    deps.onIssued?.(result.clientId);
  } catch (error) {
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
}
