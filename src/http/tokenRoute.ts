/**
 * `POST /v1/authentication/accesstoken` as a list of named steps (STYLE habit 8):
 * method → media type → bounded body → (token service: schema → client authentication
 * → issue → shape) → respond with `Cache-Control: no-store`. Credentials are read from
 * the JSON body only; this path is never forwarded upstream.
 */
import type { IncomingMessage } from 'node:http';
import { PortariaError } from '../errors.js';
import type { TokenService } from '../token/tokenService.js';
import { isJsonMediaType } from './mediaType.js';
import { BodyTooLarge, readBoundedBody } from './readBoundedBody.js';
import { sendJson } from './replies.js';
import type { GatewayResponse } from './requestScope.js';

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' } as const;

export interface TokenRouteDeps {
  readonly tokens: TokenService;
  readonly bodyLimitBytes: number;
  readonly onOutcome: (outcome: string) => void;
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
    const text = await readBoundedBody(req, deps.bodyLimitBytes);
    const exchange = await deps.tokens.exchange(text);
    res.scope.clientId = exchange.clientId;
    sendJson(res, 200, JSON.stringify(exchange.body), NO_STORE);
    deps.onOutcome('issued');
  } catch (error) {
    deps.onOutcome(outcomeOf(error));
    if (error instanceof BodyTooLarge) res.setHeader('connection', 'close');
    throw error;
  }
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
    default:
      return 'invalid_request';
  }
}
