/**
 * The HTTP side of the revocation and introspection endpoints (`src/oauth/` holds their
 * steps): hands a step list the request's method, media type, address, `Authorization`
 * and bounded body, and writes its answer — or its `OAuthError` as RFC 6749 §5.2 JSON —
 * never cached. HTTP-level refusals (405, 413, 415, 429, 503) are thrown on as
 * problem details. These paths are never forwarded upstream.
 */
import type { IncomingMessage } from 'node:http';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import type { OAuthFormCall } from '../oauth/authenticatedForm.js';
import { isOAuthError, NO_STORE } from '../oauth/oauthError.js';
import { BodyTooLarge, readBoundedBody } from './readBoundedBody.js';
import { sendJson } from './replies.js';
import { continueBody, type GatewayResponse } from './requestScope.js';

/** One endpoint: its route label and its steps. `body` null: an empty 200. */
export interface OAuthFormEndpoint {
  readonly routeId: string;
  run(call: OAuthFormCall): Promise<{ readonly clientId: string; readonly body: string | null }>;
}

export interface OAuthFormRouteDeps {
  readonly bodyLimitBytes: number;
  readonly trustedProxies: TrustedProxies;
}

export async function handleOAuthFormRequest(
  req: IncomingMessage,
  res: GatewayResponse,
  endpoint: OAuthFormEndpoint,
  deps: OAuthFormRouteDeps,
): Promise<void> {
  try {
    const result = await endpoint.run({
      method: req.method,
      contentType: req.headers['content-type'],
      clientAddress: deps.trustedProxies.clientAddress(req),
      authorization: req.headers.authorization,
      authorizationLines: res.scope.authorizationLines,
      // A pending `100 Continue` goes out once the declared length passed.
      readBody: () => readBoundedBody(req, deps.bodyLimitBytes, () => continueBody(res)),
    });
    res.scope.clientId = result.clientId;
    if (result.body === null) {
      res.statusCode = 200;
      res.setHeader('content-length', 0);
      for (const [name, value] of Object.entries(NO_STORE)) res.setHeader(name, value);
      res.end();
      return;
    }
    sendJson(res, 200, result.body, NO_STORE);
  } catch (error) {
    if (error instanceof BodyTooLarge) res.setHeader('connection', 'close');
    if (!isOAuthError(error)) throw error;
    res.scope.reason = error.reason;
    // The body was read whole before any OAuthError: the connection stays usable.
    sendJson(res, error.status, error.body(), error.headers());
  }
}
