/**
 * The HTTP side of the revocation and introspection endpoints (`src/oauth/` holds their
 * steps): hands a step list the request's method, media type, `Authorization`, source
 * address and bounded body, writes its answer (never cached), and counts the outcome. A
 * refusal is thrown on: the public entry writes it as the OAuth endpoints answer (RFC
 * 6749 §5.2 errors, problem details for HTTP-level refusals). These paths are never
 * forwarded upstream.
 */
import type { IncomingMessage } from 'node:http';
import { isPortariaError } from '../errors.js';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import type { OAuthFormCall } from '../oauth/authenticatedForm.js';
import { readBoundedBody } from './readBoundedBody.js';
import { NO_STORE, sendJson } from './replies.js';
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
}

/** Resolves when the response is written; throws the refusal otherwise. */
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
    deps.onOutcome(oauthOutcome(error));
    throw error;
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
    // RFC 8705: the certificate authenticates the client (§2) and binds its tokens (§3).
    certificate: res.scope.certificate,
    // A pending `100 Continue` goes out once the declared length passed.
    readBody: () => readBoundedBody(req, deps.bodyLimitBytes, () => continueBody(res)),
    // Spans for client authentication and signing, as the contract's operation has.
    ...(trace === null ? {} : { steps: (step: string) => trace.step(step) }),
  };
}

/** The outcome label of a refused OAuth request: its RFC 6749 code, else as the token operation's. */
export function oauthOutcome(error: unknown): string {
  return isPortariaError(error) && error.oauth !== undefined ? error.oauth : outcomeOf(error);
}
