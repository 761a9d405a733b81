/**
 * A second reference line: a bare http-proxy passthrough (keep-alive agent, 128 sockets),
 * no auth, no logging — what the gateway would cost on HTTP had it kept http-proxy, which
 * it still uses for WebSocket upgrades.
 */
import { Agent, createServer, type ServerResponse } from 'node:http';
import httpProxy from 'http-proxy';
import {
  announce,
  closeServer,
  listenLoopback,
  onStop,
  upstreamArgument,
} from './lib/childProtocol.js';

const upstream = upstreamArgument();
const agent = new Agent({ keepAlive: true, maxSockets: 128 });
const proxy = httpProxy.createProxyServer({ target: upstream, agent, xfwd: false });
proxy.on('error', (_error, _req, res) => {
  const response = res as ServerResponse;
  if (typeof response.writeHead === 'function' && !response.headersSent) {
    response.writeHead(502).end();
  } else {
    res.destroy();
  }
});

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => proxy.web(req, res));

const url = await listenLoopback(server);
announce({ url });
onStop(async () => {
  await closeServer(server);
  proxy.close();
  agent.destroy();
  return undefined;
});
