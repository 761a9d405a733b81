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
 * The steps from pair back-off to record are `authenticateWithinLimits`
 * (`limits/limitedAuthentication.ts`), which the OAuth endpoints share. With every limit
 * off the limiter is `NO_TOKEN_LIMITS` and the steps are the same. A refusal is a
 * PortariaError at once (no request is held); credentials come from the JSON body only.
 * Why the limits are ordered so: docs/security.md, token-endpoint abuse controls.
 */
import type { ClientCertificate } from '../domain/clientCertificate.js';
import { PortariaError } from '../errors.js';
import { isJsonMediaType } from '../lib/mediaType.js';
import {
  authenticateWithinLimits,
  type CredentialCheck,
  type LimitedAuthenticationDeps,
} from '../limits/limitedAuthentication.js';
import { refuseIfWaiting } from '../limits/refuseIfWaiting.js';
import { sourceAddress } from '../limits/sourceAddress.js';
import { parseTokenRequest, type TokenRequest } from './parseTokenRequest.js';
import type { ExchangeSteps, TokenExchange, TokenService } from './tokenService.js';

/** What the operation reads of a token request (the HTTP layer provides it). */
export interface TokenCall {
  readonly method: string | undefined;
  readonly contentType: string | undefined;
  /** The caller's address, as `server.trustedProxies` decides it. */
  readonly clientAddress: string;
  /** The client certificate (TLS or a trusted proxy's header); the token is bound to it. */
  readonly certificate: ClientCertificate | null;
  /** The body, read within the size limit (throws 413 over it). */
  readBody(): Promise<string>;
  /** Observes client authentication and signing (tracing on). */
  readonly steps?: ExchangeSteps;
  /**
   * The DPoP key the token is to be bound to (RFC 9449 §5): the request's proof checked,
   * after the request is read and before the client is authenticated; absent or
   * undefined: a bearer token.
   */
  readonly dpopKey?: () => Promise<string | undefined>;
}

export interface TokenOperationDeps extends LimitedAuthenticationDeps {
  readonly tokens: TokenService;
}

export async function runTokenOperation(
  call: TokenCall,
  deps: TokenOperationDeps,
): Promise<TokenExchange> {
  requirePost(call.method);
  requireJson(call.contentType);
  const address = sourceAddress(call.clientAddress);
  // The local limiter answers at once: a value is used as is, only a promise (Redis) is
  // awaited, so a request takes no extra turn of the event loop per limit.
  const addressWait = deps.limiter.takeAddress(address);
  refuseIfWaiting(
    typeof addressWait === 'number' ? addressWait : await addressWait,
    'address',
    deps,
  );
  const request = parseTokenRequest(await call.readBody());
  const dpopKey = await call.dpopKey?.();
  const exchange: Exchange = {
    request,
    certificate: call.certificate,
    steps: call.steps,
    dpopKey,
  };
  return authenticateWithinLimits(request.clientId, address, EXCHANGE, exchange, deps);
}

interface Exchange {
  readonly request: TokenRequest;
  readonly certificate: ClientCertificate | null;
  readonly steps: ExchangeSteps | undefined;
  readonly dpopKey: string | undefined;
}

/** Client authentication and signing; a refused secret is `invalid-client` (401). */
const EXCHANGE: CredentialCheck<Exchange, TokenOperationDeps, TokenExchange> = (exchange, deps) =>
  deps.tokens.exchange(exchange.request, exchange.certificate, exchange.steps, exchange.dpopKey);

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
