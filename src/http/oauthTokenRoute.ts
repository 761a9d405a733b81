/**
 * The HTTP side of the OAuth 2.0 token endpoint (`src/oauth/tokenEndpoint.ts` holds its
 * steps): hands it the method, media type, `Authorization`, source address and bounded
 * body, writes the RFC 6749 §5.1 answer, and counts the outcome; a refusal is thrown on
 * to the public entry, which writes it as the OAuth endpoints answer.
 */
import type { IncomingMessage } from 'node:http';
import { type OAuthTokenDeps, runOAuthTokenRequest } from '../oauth/tokenEndpoint.js';
import type { DpopStepDeps } from '../pipeline/dpopProofStep.js';
import { issuanceKey } from './dpopIssuance.js';
import { type OAuthFormRouteDeps, oauthFormCall, oauthOutcome } from './oauthFormRoute.js';
import { NO_STORE, sendJson } from './replies.js';
import type { GatewayResponse } from './requestScope.js';

export interface OAuthTokenRouteDeps extends OAuthTokenDeps, OAuthFormRouteDeps {
  /** With `dpop.enabled`: a `DPoP` proof binds the token (`dpopIssuance.ts`). */
  readonly dpop?: DpopStepDeps | undefined;
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
    const call = oauthFormCall(req, res, deps);
    const dpop = deps.dpop;
    const result = await runOAuthTokenRequest(
      dpop === undefined || res.scope.dpopProof === undefined
        ? call
        : { ...call, dpopKey: () => issuanceKey(res.scope, dpop, 'oauth') },
      deps,
    );
    res.scope.clientId = result.clientId;
    sendJson(res, 200, result.body, NO_STORE);
    deps.onOutcome('issued');
    deps.onIssued?.(result.clientId);
  } catch (error) {
    deps.onOutcome(oauthOutcome(error));
    throw error;
  }
}
