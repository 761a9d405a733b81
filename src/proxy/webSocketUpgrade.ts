/**
 * Whether a request or an upstream's answer names the WebSocket protocol in `Upgrade`
 * (RFC 6455 §4, RFC 9110 §7.8). Pure functions of the fields.
 */
import type { IncomingMessage } from 'node:http';

/**
 * `Upgrade` names websocket in an HTTP/1.1 request (any method: which upgrades the gateway
 * takes up at all). In an HTTP/1.0 request the field is ignored, as RFC 9110 §7.8
 * requires: the request is answered as the plain request it also is.
 */
export function offersWebSocket(req: IncomingMessage): boolean {
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 0) return false;
  return namesWebSocket(req.headers.upgrade);
}

export function namesWebSocket(upgrade: string | undefined): boolean {
  const tokens = upgrade?.toLowerCase().split(',') ?? [];
  return tokens.some((token) => token.trim() === 'websocket');
}

/** A WebSocket handshake this proxy serves (RFC 6455 §4.1: a GET). */
export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return req.method === 'GET' && offersWebSocket(req);
}
