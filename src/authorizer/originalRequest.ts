/**
 * What a decision entry says the original request was: its method and request target,
 * read from where each proxy puts them — nginx `auth_request` in two headers it is told
 * to set (`authorizer.originalMethodHeader` / `originalUriHeader`), Traefik `forwardAuth`
 * in `X-Forwarded-Method` / `X-Forwarded-Uri`, Envoy's HTTP `ext_authz` in the check
 * request itself (its method, and its path behind the `path_prefix` `/envoy`), Envoy's
 * gRPC `ext_authz` in `attributes.request.http` (`grpcCheck.ts`).
 *
 * Only a trusted proxy is asked (the entry checks the peer first); even so, a missing,
 * repeated or malformed value is refused (400), never guessed: a decision about a request
 * other than the one forwarded would be worse than none.
 */
import type { IncomingMessage } from 'node:http';
import { PortariaError } from '../errors.js';

export type { DecisionEntry } from '../domain/decisionEntry.js';

export interface OriginalRequest {
  readonly method: string;
  /** The request target in origin form, as the client sent it (canonicalised later). */
  readonly target: string;
}

/** The path prefix Envoy's HTTP service is configured with (`path_prefix: /envoy`). */
export const ENVOY_PREFIX = '/envoy';

/** RFC 9110 §9.1: a method is a token; bounded as the access line bounds it. */
const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/;

export function originalRefused(detail: string): PortariaError {
  return new PortariaError('invalid-request', detail, { reason: 'original-request' });
}

/** A proxy's header carrying part of the original request: exactly one line, non-empty. */
function single(req: IncomingMessage, name: string): string {
  const values = req.headersDistinct[name.toLowerCase()];
  if (values === undefined || values.length === 0 || values[0] === '') {
    throw originalRefused(`The decision request carries no ${name} header.`);
  }
  if (values.length > 1) throw originalRefused(`Send exactly one ${name} header.`);
  return values[0] as string;
}

export function checkedMethod(method: string, from: string): string {
  if (!METHOD.test(method)) throw originalRefused(`${from} is not an HTTP method.`);
  return method;
}

const ABSOLUTE = /^https?:\/\//i;

/**
 * nginx `auth_request`: the headers the location sets with `proxy_set_header`. The URI is
 * `$request_uri` (origin form), or an absolute URL `$scheme://$http_host$request_uri` as
 * ingress-nginx sends it in `X-Original-URL`: then its target is what follows the
 * authority, taken as it is (no URL parser: it would resolve the dot segments the path step
 * must see).
 */
export function nginxOriginal(
  req: IncomingMessage,
  methodHeader: string,
  uriHeader: string,
): OriginalRequest {
  const method = checkedMethod(single(req, methodHeader), methodHeader);
  const uri = single(req, uriHeader);
  if (!ABSOLUTE.test(uri)) return { method, target: uri };
  const authorityStart = uri.indexOf('//') + 2;
  const slash = uri.indexOf('/', authorityStart);
  const other = uri.slice(authorityStart, slash === -1 ? uri.length : slash).search(/[?#@\\]/);
  if (slash === -1 || other !== -1) {
    throw originalRefused(`${uriHeader} is an absolute URL without a path after its host.`);
  }
  return { method, target: uri.slice(slash) };
}

/** Traefik `forwardAuth`: `X-Forwarded-Method` and `X-Forwarded-Uri` (path and query). */
export function traefikOriginal(req: IncomingMessage): OriginalRequest {
  return {
    method: checkedMethod(single(req, 'X-Forwarded-Method'), 'X-Forwarded-Method'),
    target: single(req, 'X-Forwarded-Uri'),
  };
}

/** Envoy's HTTP `ext_authz`: the original method, and the original target after `/envoy`. */
export function envoyOriginal(req: IncomingMessage): OriginalRequest {
  const url = req.url ?? '';
  const rest = url.slice(ENVOY_PREFIX.length);
  // `/envoy` alone is the original `/` only as `/envoy/`; Envoy always sends the prefix
  // followed by the original path, which starts with `/`.
  if (!rest.startsWith('/')) {
    throw originalRefused(
      'The decision request path must be /envoy followed by the original path.',
    );
  }
  return { method: checkedMethod(req.method ?? '', 'The method'), target: rest };
}
