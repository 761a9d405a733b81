/**
 * The HTTP side of the OAuth 2.0 token endpoint (`src/oauth/tokenEndpoint.ts` holds its
 * steps): hands it the method, media type, `Authorization`, source address and bounded
 * body, writes the RFC 6749 §5.1 answer or §5.2 error, and counts the outcome.
 */
import type { IncomingMessage } from 'node:http';
import { NO_STORE } from '../oauth/oauthError.js';
import { type OAuthTokenDeps, runOAuthTokenRequest } from '../oauth/tokenEndpoint.js';
import { answerOAuthFailure, type OAuthFormRouteDeps, oauthFormCall } from './oauthFormRoute.js';
import { sendJson } from './replies.js';
import type { GatewayResponse } from './requestScope.js';

export interface OAuthTokenRouteDeps extends OAuthTokenDeps, OAuthFormRouteDeps {
  /** A token was issued to `clientId`. */
  readonly onIssued?: (clientId: string) => void;
}

/** Resolves when the response is written; throws PortariaError for HTTP-level refusals. */
export async function handleOAuthTokenRequest(
  req: IncomingMessage,
  res: GatewayResponse,
  deps: OAuthTokenRouteDeps,
): Promise<void> {
  try {
    const result = await runOAuthTokenRequest(oauthFormCall(req, res, deps), deps);
    res.scope.clientId = result.clientId;
    sendJson(res, 200, result.body, NO_STORE);
    deps.onOutcome('issued');
    deps.onIssued?.(result.clientId);
  } catch (error) {
    answerOAuthFailure(req, res, error, deps);
  }
}
