/**
 * The demo upstream `npm start` runs on loopback: it answers every request with a JSON
 * echo of what the gateway forwarded (method, path, the identity headers), so a newcomer
 * sees what an upstream service receives. Not used outside demo mode.
 */
import { createServer, type Server } from 'node:http';

export async function startDemoUpstream(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const body = JSON.stringify(
      {
        message:
          'Hello from the demo upstream: Portaria verified your token and forwarded this request.',
        method: req.method,
        path: req.url,
        clientId: req.headers['x-client-id'] ?? null,
        scope: req.headers['x-token-scope'] ?? null,
        tokenId: req.headers['x-token-jti'] ?? null,
        requestId: req.headers['x-request-id'] ?? null,
      },
      null,
      2,
    );
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
    req.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string')
    throw new Error('demo upstream did not bind');
  return { url: `http://127.0.0.1:${address.port}`, server };
}
