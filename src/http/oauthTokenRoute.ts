/**
 * The HTTP side of the OAuth 2.0 token endpoint (`src/oauth/tokenEndpoint.ts` holds its
 * steps): hands it the method, media type, `Authorization`, source address and bounded
 * body, writes the RFC 6749 §5.1 answer, and counts the outcome; a refusal is thrown on
 * to the public entry, which writes it as the OAuth endpoints answer.
 */
import type { IncomingMessage } from 'node:http';
import { type OAuthTokenDeps, runOAuthTokenRequest } from '../oauth/tokenEndpoint.js';
import { type OAuthFormRouteDeps, oauthFormCall, oauthOutcome } from './oauthFormRoute.js';
import { NO_STORE, sendJson } from './replies.js';
import type { GatewayResponse } from './requestScope.js';

export interface OAuthTokenRouteDeps extends OAuthTokenDeps, OAuthFormRouteDeps {
  /** A token was issued to `clientId`. */
  readonly onIssued?: (clientId: string) => void;
}

/** Resolves when the response is written; throws the refusal otherwise. */
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
    deps.onOutcome(oauthOutcome(error));
    throw error;
  }
}
