/**
 * Writes an `OAuthError` as RFC 6749 §5.2 says: JSON `{error, error_description}` with
 * the code's status, `Cache-Control: no-store`, `Pragma: no-cache`, and the Basic
 * challenge on a 401 for a request that used HTTP Basic. The private reason goes to the
 * request scope (access line), as for problem details.
 */
import type { IncomingMessage } from 'node:http';
import type { OAuthError } from '../oauth/oauthError.js';
import { hasBody } from './framingChecks.js';
import type { GatewayResponse } from './requestScope.js';

export function sendOAuthError(
  req: IncomingMessage,
  res: GatewayResponse,
  error: OAuthError,
): void {
  res.scope.reason = error.reason;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = error.body();
  res.statusCode = error.status;
  res.setHeader('content-type', 'application/json');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.setHeader('x-content-type-options', 'nosniff');
  for (const [name, value] of Object.entries(error.headers())) res.setHeader(name, value);
  // A body left unread must not be parsed as the next request.
  if (!req.complete && hasBody(req)) res.setHeader('connection', 'close');
  res.end(body);
}
