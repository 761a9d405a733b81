/**
 * Which methods the gateway forwards; every other method is answered here with a 405.
 */
import { PortariaError } from '../errors.js';

/** The methods the gateway forwards (the `Allow` of its 405s for CONNECT and TRACE). */
export const FORWARDED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

export function isForwardedMethod(method: string | undefined): boolean {
  switch (method) {
    case 'GET':
    case 'POST':
    case 'PUT':
    case 'PATCH':
    case 'DELETE':
    case 'HEAD':
    case 'OPTIONS':
      return true;
    default:
      return false;
  }
}

/**
 * Other methods are answered here, never forwarded. TRACE: the upstream would echo the
 * request it received — with the identity headers the gateway set — and no API needs it.
 * WebDAV (PROPFIND, MKCOL, LOCK…), PURGE and the rest of what Node's parser knows: an
 * API behind the gateway has no use for them, and a cache or file server that does must
 * not be reachable with them through it.
 */
export function methodRefused(method: string | undefined): PortariaError {
  return new PortariaError(
    'method-not-allowed',
    method === 'TRACE' ? 'TRACE is not supported.' : 'This method is not supported.',
    {
      reason: method === 'TRACE' ? 'trace' : 'method',
      headers: { allow: FORWARDED_METHODS },
    },
  );
}
