/**
 * The HTTP side of the token operation (`src/token/tokenOperation.ts` holds its steps):
 * hands it the request's method, media type, source address and bounded body, writes
 * the result with `Cache-Control: no-store`, and counts the outcome. This path is never
 * forwarded upstream.
 */
import type { IncomingMessage } from 'node:http';
import { PortariaError } from '../errors.js';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import type { DpopStepDeps } from '../pipeline/dpopProofStep.js';
import { runTokenOperation, type TokenOperationDeps } from '../token/tokenOperation.js';
import { issuanceKey } from './dpopIssuance.js';
import { readBoundedBody } from './readBoundedBody.js';
import { continueBody, type GatewayResponse } from './requestScope.js';

export interface TokenRouteDeps extends TokenOperationDeps {
  readonly bodyLimitBytes: number;
  readonly onOutcome: (outcome: string) => void;
  /** A token was issued to `clientId` (an authenticated, registered client). */
  readonly onIssued?: (clientId: string) => void;
  /** `server.trustedProxies`: which `X-Forwarded-For` hop is the source address. */
  readonly trustedProxies: TrustedProxies;
  /** With `dpop.enabled`: a `DPoP` proof binds the token (`dpopIssuance.ts`). */
  readonly dpop?: DpopStepDeps | undefined;
}

/** Resolves when the response is written; throws PortariaError for refusals. */
export async function handleTokenRequest(
  req: IncomingMessage,
  res: GatewayResponse,
  deps: TokenRouteDeps,
): Promise<void> {
  const scope = res.scope;
  const trace = scope.trace;
  try {
    const exchange = await runTokenOperation(
      {
        method: req.method,
        contentType: req.headers['content-type'],
        // As the request's accounting read it behind `server.trustedProxies`.
        clientAddress: scope.clientAddress ?? '',
        certificate: scope.certificate,
        // A pending `100 Continue` goes out once the declared length passed.
        readBody: () => readBoundedBody(req, deps.bodyLimitBytes, () => continueBody(res)),
        steps: trace === null ? undefined : (step: string) => trace.step(step),
        ...(deps.dpop === undefined || scope.dpopProof === undefined
          ? {}
          : { dpopKey: () => issuanceKey(scope, deps.dpop, 'problem') }),
      },
      deps,
    );
    scope.clientId = exchange.clientId;
    const json = JSON.stringify(exchange.body);
    // One head, its fields in a flat list: Node writes it without building a header map
    // (the public listener leaves X-Request-Id to this answer, and to its refusals).
    res.writeHead(200, [
      'x-request-id',
      scope.id,
      'content-type',
      'application/json',
      'content-length',
      String(Buffer.byteLength(json)),
      'cache-control',
      'no-store',
      'pragma',
      'no-cache',
    ]);
    res.end(json);
    deps.onOutcome('issued');
    deps.onIssued?.(exchange.clientId);
  } catch (error) {
    deps.onOutcome(outcomeOf(error));
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
