/**
 * `POST /v1/authentication/accesstoken` as a list of named steps, in order:
 *
 *   method          POST only (405)
 *   media type      application/json (415)
 *   address limit   the caller's address bucket, before the body is read (429)
 *   body            read within `token.bodyLimitBytes` (413)
 *   schema          `{clientId, clientSecret}` and nothing else (400)
 *   pair back-off   (client, address) still waiting after wrong secrets (429); also
 *                   whether the pair is known (got a token lately)
 *   client limit    the client's bucket for its known pairs, or the one for its other
 *                   addresses (429)
 *   authenticate    the client's secret, the same work for unknown clients (401)
 *   record          a failure counts towards the back-off, a success resets it
 *   issue, shape    the signed JWT and the contract's result fields
 *
 * With every limit off the limiter is `NO_TOKEN_LIMITS` and the steps are the same. A
 * refusal is a PortariaError at once (no request is held); credentials come from the
 * JSON body only. Why the limits are ordered so: docs/security.md, token-endpoint abuse
 * controls.
 */
import { PortariaError } from '../errors.js';
import { isJsonMediaType } from '../lib/mediaType.js';
import { pairKey } from '../limits/limitKeys.js';
import type { AttemptOutcome, PairAttempts } from '../limits/pairAttempts.js';
import { type LimitReason, refuseIfWaiting } from '../limits/refuseIfWaiting.js';
import { sourceAddress } from '../limits/sourceAddress.js';
import type { TokenEndpointLimits } from '../limits/tokenEndpointLimits.js';
import { parseTokenRequest } from './parseTokenRequest.js';
import type { ExchangeSteps, TokenExchange, TokenService } from './tokenService.js';

/** What the operation reads of a token request (the HTTP layer provides it). */
export interface TokenCall {
  readonly method: string | undefined;
  readonly contentType: string | undefined;
  /** The caller's address, as `server.trustedProxies` decides it. */
  readonly clientAddress: string;
  /** The body, read within the size limit (throws 413 over it). */
  readBody(): Promise<string>;
  /** Observes client authentication and signing (tracing on). */
  readonly steps?: ExchangeSteps;
}

export interface TokenOperationDeps {
  readonly tokens: TokenService;
  /** Token limits; `NO_TOKEN_LIMITS` when every limit is off. */
  readonly limiter: TokenEndpointLimits;
  /** One check at a time for a pair that failed lately; null when the back-off is off. */
  readonly attempts: PairAttempts | null;
  /** A request refused by a token limit. */
  readonly onLimited: (reason: LimitReason) => void;
}

export async function runTokenOperation(
  call: TokenCall,
  deps: TokenOperationDeps,
): Promise<TokenExchange> {
  const { limiter } = deps;
  requirePost(call.method);
  requireJson(call.contentType);
  const address = sourceAddress(call.clientAddress);
  // The local limiter answers at once: a value is used as is, only a promise (Redis) is
  // awaited, so a request takes no extra turn of the event loop per limit.
  const addressWait = limiter.takeAddress(address);
  refuseIfWaiting(
    typeof addressWait === 'number' ? addressWait : await addressWait,
    'address',
    deps,
  );
  const request = parseTokenRequest(await call.readBody());
  const { clientId } = request;
  const check = limiter.checkPair(clientId, address);
  const { waitMs, known } = 'then' in check ? await check : check;
  refuseIfWaiting(waitMs, 'backoff', deps);
  const pair = pairKey(clientId, address);
  if (deps.attempts?.begin(pair) === false) refuseIfWaiting(1000, 'backoff', deps);
  let outcome: AttemptOutcome = 'unchecked';
  try {
    const clientWait = limiter.takeClient(clientId, known);
    refuseIfWaiting(typeof clientWait === 'number' ? clientWait : await clientWait, 'client', deps);
    let exchange: TokenExchange;
    try {
      exchange = await deps.tokens.exchange(request, call.steps);
    } catch (error) {
      if (error instanceof PortariaError && error.code === 'invalid-client') {
        outcome = 'failed';
        await limiter.recordFailure(clientId, address);
      }
      throw error;
    }
    outcome = 'succeeded';
    const recorded = limiter.recordSuccess(clientId, address);
    if (recorded !== undefined) await recorded;
    return exchange;
  } finally {
    // After the outcome is recorded: the next check of the pair sees its new wait.
    deps.attempts?.end(pair, outcome);
  }
}

function requirePost(method: string | undefined): void {
  if (method !== 'POST') {
    throw new PortariaError('method-not-allowed', 'The token operation accepts POST only.', {
      reason: 'method',
      headers: { allow: 'POST' },
    });
  }
}

function requireJson(contentType: string | undefined): void {
  // The common spelling first, without parsing parameters.
  if (contentType !== 'application/json' && !isJsonMediaType(contentType)) {
    throw new PortariaError('unsupported-media-type', 'Content-Type must be application/json.', {
      reason: 'content-type',
    });
  }
}
