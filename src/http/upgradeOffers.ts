/**
 * Which `Upgrade` requests the gateway takes up: WebSocket only. Any other offer — an
 * HTTP/2 client's `Upgrade: h2c` on a plain `http://` URL (curl --http2, Java's
 * HttpClient by default) — is ignored, as RFC 9110 §7.8 allows, and the request is
 * answered as the HTTP/1.1 request it also is: a token request gets its token.
 *
 * Node ≥ 24.9 asks `shouldUpgradeCallback` and sends a declined upgrade to the `request`
 * listener itself. Older Node (20, 22) emits `upgrade` for every such request with the
 * HTTP parser already detached; there `reparseWithoutUpgrade` writes the request head
 * back without the upgrade fields (`Upgrade`, `HTTP2-Settings`, and those tokens of
 * `Connection`), in front of any bytes read past it, and hands the socket to the server
 * again as a new connection, whose parser then reads it as an ordinary request.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';

const UPGRADE_FIELDS = new Set(['upgrade', 'http2-settings']);

/** Hands a declined upgrade request back to `server` as an ordinary request. */
export function reparseWithoutUpgrade(
  server: Server,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  const lines = [`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/${req.httpVersion}`];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    const lower = name.toLowerCase();
    if (UPGRADE_FIELDS.has(lower)) continue;
    if (lower === 'connection') {
      const kept = value
        .split(',')
        .map((token) => token.trim())
        .filter((token) => token !== '' && !UPGRADE_FIELDS.has(token.toLowerCase()));
      if (kept.length > 0) lines.push(`${name}: ${kept.join(', ')}`);
      continue;
    }
    lines.push(`${name}: ${value}`);
  }
  const requestHead = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  socket.unshift(head.length > 0 ? Buffer.concat([requestHead, head]) : requestHead);
  server.emit('connection', socket);
}
