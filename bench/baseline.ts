/**
 * The baseline: the least a Node proxy can do — an undici `Pool.stream` passthrough to
 * the upstream, with the same pool settings as the gateway (128 keep-alive connections,
 * no pipelining), hop-by-hop fields dropped, and nothing else: no auth, no logging, no
 * metrics, no request id.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { type Dispatcher, Pool } from 'undici';
import {
  announce,
  closeServer,
  listenLoopback,
  onStop,
  upstreamArgument,
} from './lib/childProtocol.js';

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

const upstream = upstreamArgument();
const pool = new Pool(upstream, { connections: 128, pipelining: 1 });

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
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
});

const url = await listenLoopback(server);
announce({ url });
onStop(async () => {
  await closeServer(server);
  await pool.close();
  return undefined;
});
