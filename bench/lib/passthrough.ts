/**
 * The least a Node proxy can do, shared by the baseline and the bare peers: an undici
 * `Pool.stream` passthrough to the upstream with the gateway's pool settings (128
 * keep-alive connections, no pipelining), hop-by-hop fields dropped, nothing else.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { type Dispatcher, Pool } from 'undici';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function endToEnd(
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

export interface Passthrough {
  forward(req: IncomingMessage, res: ServerResponse): void;
  close(): Promise<void>;
}

export function createPassthrough(upstream: string): Passthrough {
  const pool = new Pool(upstream, { connections: 128, pipelining: 1 });
  return {
    forward(req, res) {
      const withBody =
        req.headers['transfer-encoding'] !== undefined ||
        (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
      pool.stream(
        {
          path: req.url ?? '/',
          method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
          headers: endToEnd(req.headers),
          body: withBody ? req : null,
        },
        ({ statusCode, headers }) => {
          res.writeHead(statusCode, endToEnd(headers));
          return res;
        },
        (error) => {
          if (error === null) return;
          if (res.headersSent) res.destroy();
          else res.writeHead(502).end();
        },
      );
    },
    close: () => pool.close(),
  };
}
