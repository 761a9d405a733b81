/**
 * `POST /v1/authentication/accesstoken` as a list of named steps (STYLE habit 8):
 * method → media type → per-address limit → bounded body → (token service: schema →
 * client authentication → issue → shape) → respond with `Cache-Control: no-store`.
 * Credentials are read from the JSON body only; this path is never forwarded upstream.
 *
 * With token limits on, the body is parsed first for its `clientId`, then: failed-secret
 * back-off for (client, address), which also tells whether the pair is known (got a token
 * lately) → per-client limit, from the bucket of the client's known pairs or the one of
 * its other addresses → authentication → the outcome is recorded (a failure counts
 * towards the back-off, a success resets it and makes the pair known). Wrong secrets from
 * addresses the client never used thus cannot drain the bucket its own addresses use
 * (`tokenLimiter.ts`). A refusal is 429 `too-many-requests` with `Retry-After` at once;
 * the request is never held. A pair that is backing off is refused before its secret is
 * looked at, right or wrong, and so is a second concurrent check of a pair whose last
 * check failed (`PairAttempts`). Unknown clients go through the same steps as known
 * ones, and failure and success each cost one recording step, so neither the limiter
 * nor its timing tells them apart.
 */
import type { IncomingMessage } from 'node:http';
import { type FailureReason, PortariaError } from '../errors.js';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import { parseTokenRequest } from '../token/parseTokenRequest.js';
import type { TokenExchange, TokenService } from '../token/tokenService.js';
import { pairKey } from '../tokenLimits/limitKeys.js';
import type { AttemptOutcome, PairAttempts } from '../tokenLimits/pairAttempts.js';
import { sourceAddress } from '../tokenLimits/sourceAddress.js';
import type { LimitReason, TokenLimiter } from '../tokenLimits/tokenLimiter.js';
import { isJsonMediaType } from './mediaType.js';
import { BodyTooLarge, readBoundedBody } from './readBoundedBody.js';
import { sendJson } from './replies.js';
import { continueBody, type GatewayResponse } from './requestScope.js';

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' } as const;

export interface TokenRouteDeps {
  readonly tokens: TokenService;
  readonly bodyLimitBytes: number;
  readonly onOutcome: (outcome: string) => void;
  /** A token was issued to `clientId` (an authenticated, registered client). */
  readonly onIssued?: (clientId: string) => void;
  /** Token limits; null when every limit is off. */
  readonly limiter: TokenLimiter | null;
  /** One check at a time for a pair that failed lately; null when the back-off is off. */
  readonly attempts: PairAttempts | null;
  /** `server.trustedProxies`: which `X-Forwarded-For` hop is the source address. */
  readonly trustedProxies: TrustedProxies;
  /** A request refused by a token limit. */
  readonly onLimited: (reason: LimitReason) => void;
}

/** Resolves when the response is written; throws PortariaError for refusals. */
export async function handleTokenRequest(
  req: IncomingMessage,
  res: GatewayResponse,
  deps: TokenRouteDeps,
): Promise<void> {
  try {
    requirePost(req);
    requireJson(req);
    const beforeBody = () => continueBody(res);
    const exchange =
      deps.limiter === null
        ? await deps.tokens.exchange(
            parseTokenRequest(await readBoundedBody(req, deps.bodyLimitBytes, beforeBody)),
          )
        : await limitedExchange(req, deps, deps.limiter, beforeBody);
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

async function limitedExchange(
  req: IncomingMessage,
  deps: TokenRouteDeps,
  limiter: TokenLimiter,
  beforeBody: () => void,
): Promise<TokenExchange> {
  const address = sourceAddress(deps.trustedProxies.clientAddress(req));
  refuseIfWaiting(await limiter.takeAddress(address), 'address', deps);
  const request = parseTokenRequest(await readBoundedBody(req, deps.bodyLimitBytes, beforeBody));
  const { clientId } = request;
  const { waitMs, known } = await limiter.checkPair(clientId, address);
  refuseIfWaiting(waitMs, 'backoff', deps);
  const pair = pairKey(clientId, address);
  if (deps.attempts?.begin(pair) === false) refuseIfWaiting(1000, 'backoff', deps);
  let outcome: AttemptOutcome = 'unchecked';
  try {
    refuseIfWaiting(await limiter.takeClient(clientId, known), 'client', deps);
    let exchange: TokenExchange;
    try {
      exchange = await deps.tokens.exchange(request);
    } catch (error) {
      if (error instanceof PortariaError && error.code === 'invalid-client') {
        outcome = 'failed';
        await limiter.recordFailure(clientId, address);
      }
      throw error;
    }
    outcome = 'succeeded';
    await limiter.recordSuccess(clientId, address);
    return exchange;
  } finally {
    // After the outcome is recorded: the next check of the pair sees its new wait.
    deps.attempts?.end(pair, outcome);
  }
}

const LIMITED: Readonly<Record<LimitReason, { reason: FailureReason; detail: string }>> = {
  address: {
    reason: 'rate-limit-address',
    detail:
      'Too many token requests from this address; try again after the seconds given in Retry-After.',
  },
  client: {
    reason: 'rate-limit-client',
    detail:
      'Too many token requests for this client; try again after the seconds given in Retry-After.',
  },
  backoff: {
    reason: 'failed-secret-backoff',
    detail:
      'Too many failed attempts for this client from this address; try again after the seconds given in Retry-After.',
  },
};

/** 429 when a limit answered a wait; `Retry-After` in whole seconds, rounded up, at least 1. */
function refuseIfWaiting(waitMs: number, limit: LimitReason, deps: TokenRouteDeps): void {
  if (waitMs <= 0) return;
  deps.onLimited(limit);
  const { reason, detail } = LIMITED[limit];
  throw new PortariaError('too-many-requests', detail, {
    reason,
    headers: { 'retry-after': String(Math.max(1, Math.ceil(waitMs / 1000))) },
  });
}

function requirePost(req: IncomingMessage): void {
  if (req.method !== 'POST') {
    throw new PortariaError('method-not-allowed', 'The token operation accepts POST only.', {
      reason: 'method',
      headers: { allow: 'POST' },
    });
  }
}

function requireJson(req: IncomingMessage): void {
  if (!isJsonMediaType(req.headers['content-type'])) {
    throw new PortariaError('unsupported-media-type', 'Content-Type must be application/json.', {
      reason: 'content-type',
    });
  }
}

function outcomeOf(error: unknown): string {
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
