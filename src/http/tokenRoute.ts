/**
 * The HTTP side of the token operation (`src/token/tokenOperation.ts` holds its steps):
 * hands it the request's method, media type, source address and bounded body, writes
 * the result with `Cache-Control: no-store`, and counts the outcome. This path is never
 * forwarded upstream.
 */
import type { IncomingMessage } from 'node:http';
import { PortariaError } from '../errors.js';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import { runTokenOperation, type TokenOperationDeps } from '../token/tokenOperation.js';
import { BodyTooLarge, readBoundedBody } from './readBoundedBody.js';
import { sendJson } from './replies.js';
import { continueBody, type GatewayResponse } from './requestScope.js';

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' } as const;

export interface TokenRouteDeps extends TokenOperationDeps {
  readonly bodyLimitBytes: number;
  readonly onOutcome: (outcome: string) => void;
  /** A token was issued to `clientId` (an authenticated, registered client). */
  readonly onIssued?: (clientId: string) => void;
  /** `server.trustedProxies`: which `X-Forwarded-For` hop is the source address. */
  readonly trustedProxies: TrustedProxies;
}

/** Resolves when the response is written; throws PortariaError for refusals. */
export async function handleTokenRequest(
  req: IncomingMessage,
  res: GatewayResponse,
  deps: TokenRouteDeps,
): Promise<void> {
  const trace = res.scope.trace;
  try {
    const exchange = await runTokenOperation(
      {
        method: req.method,
        contentType: req.headers['content-type'],
        clientAddress: deps.trustedProxies.clientAddress(req),
        // A pending `100 Continue` goes out once the declared length passed.
        readBody: () => readBoundedBody(req, deps.bodyLimitBytes, () => continueBody(res)),
        ...(trace === null ? {} : { steps: (step: string) => trace.step(step) }),
      },
      deps,
    );
    res.scope.clientId = exchange.clientId;
    sendJson(res, 200, JSON.stringify(exchange.body), NO_STORE);
    deps.onOutcome('issued');
    deps.onIssued?.(exchange.clientId);
  } catch (error) {
    deps.onOutcome(outcomeOf(error));
    if (error instanceof BodyTooLarge) res.setHeader('connection', 'close');
    throw error;
  }
}

export function outcomeOf(error: unknown): string {
  if (!(error instanceof PortariaError)) return 'error';
  switch (error.code) {
    case 'invalid-client':
      return 'invalid_client';
    case 'payload-too-large':
      return 'too_large';
    case 'unsupported-media-type':
      return 'unsupported_media_type';
    case 'method-not-allowed':
      return 'method_not_allowed';
    case 'too-many-requests':
      return 'rate_limited';
    case 'service-unavailable':
      return 'unavailable';
    default:
      return 'invalid_request';
  }
}
