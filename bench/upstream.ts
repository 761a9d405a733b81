/**
 * The bench upstream: a plain `node:http` server answering every request with the same
 * small JSON body (keep-alive, explicit `Content-Length`), and a WebSocket echo on any
 * path. Every system under test forwards to this one process, so the upstream's cost is
 * identical for all of them.
 */
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
import { announce, closeServer, listenLoopback, onStop } from './lib/childProtocol.js';

const BODY = Buffer.from(
  JSON.stringify({ id: 42, status: 'shipped', items: [{ sku: 'A-1', qty: 2 }], total: 19.9 }),
);
const HEADERS = { 'content-type': 'application/json', 'content-length': String(BODY.length) };

// A long keep-alive so the pools keep their sockets between measurement runs.
const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  req.resume();
  res.writeHead(200, HEADERS);
  res.end(BODY);
});
const sockets = new WebSocketServer({ server, perMessageDeflate: false });
sockets.on('connection', (socket) => {
  socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary }));
});

const url = await listenLoopback(server);
announce({ url, bodyBytes: BODY.length });
onStop(async () => {
  for (const client of sockets.clients) client.terminate();
  sockets.close();
  await closeServer(server);
  return undefined;
});
