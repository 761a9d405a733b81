/**
 * The baseline: the least a Node proxy can do — an undici `Pool.stream` passthrough to
 * the upstream, with the same pool settings as the gateway (128 keep-alive connections,
 * no pipelining), hop-by-hop fields dropped, and nothing else: no auth, no logging, no
 * metrics, no request id.
 */
import { createServer } from 'node:http';
import {
  announce,
  closeServer,
  listenLoopback,
  onStop,
  upstreamArgument,
} from './lib/childProtocol.js';
import { createPassthrough } from './lib/passthrough.js';

const passthrough = createPassthrough(upstreamArgument());
const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) =>
  passthrough.forward(req, res),
);

const url = await listenLoopback(server);
announce({ url });
onStop(async () => {
  await closeServer(server);
  await passthrough.close();
  return undefined;
});
