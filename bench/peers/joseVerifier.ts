/**
 * Peer: bare undici passthrough + jose `jwtVerify` (ES256) on every request — what a
 * hand-written Node verifier costs with no cache. The same checks as the gateway's on a
 * token of ours: `alg` ES256, `typ: at+jwt`, signature, exp/nbf with 60 s skew, iss, aud;
 * a refused token gets a bare 401.
 *
 *   node dist-test/bench/peers/joseVerifier.js http://127.0.0.1:<port> <public key PEM file>
 */
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { jwtVerify } from 'jose';
import { BENCH_AUDIENCE, BENCH_ISSUER } from '../lib/benchClaims.js';
import {
  announce,
  closeServer,
  listenLoopback,
  onStop,
  upstreamArgument,
} from '../lib/childProtocol.js';
import { createPassthrough } from '../lib/passthrough.js';

const keyFile = process.argv[3];
if (keyFile === undefined) {
  process.stderr.write('usage: node joseVerifier.js http://127.0.0.1:<port> <public.pem>\n');
  process.exit(2);
}
const key = createPublicKey(readFileSync(keyFile, 'utf8'));
const options = {
  issuer: BENCH_ISSUER,
  audience: BENCH_AUDIENCE,
  algorithms: ['ES256'],
  typ: 'at+jwt',
  clockTolerance: 60,
};
const passthrough = createPassthrough(upstreamArgument());

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const header = req.headers.authorization;
  if (header === undefined || !header.startsWith('Bearer ')) {
    res.writeHead(401).end();
    return;
  }
  jwtVerify(header.slice('Bearer '.length), key, options).then(
    () => passthrough.forward(req, res),
    () => res.writeHead(401).end(),
  );
});

const url = await listenLoopback(server);
announce({ url });
onStop(async () => {
  await closeServer(server);
  await passthrough.close();
  return undefined;
});
