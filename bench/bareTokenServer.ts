/**
 * Peer of the token operation: a bare token server doing the same essential work with
 * nothing around it — `POST` a JSON body (16 KiB limit), `JSON.parse`, the client looked
 * up by id, its secret checked as a sha256 digest in constant time, an ES256 JWT signed
 * with the gateway's claims (RFC 9068) and the result written with `Cache-Control:
 * no-store`. No limits, no logging, no metrics, no schema, no problem details.
 *
 *   node dist-test/bench/bareTokenServer.js <private key PEM file> <kid> [--signer node|jose]
 *
 * `--signer node` (default) signs with `crypto.sign` on a cached `KeyObject` (one
 * synchronous OpenSSL call, the gateway's `keys/signJws.ts`: r‖s as JWS wants, RFC 7518 §3.4);
 * `--signer jose` with jose's `SignJWT` (WebCrypto). Announces `{ url, clientId,
 * clientSecret }`.
 */
import { createHash, createPrivateKey, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { SignJWT } from 'jose';
import { signJws } from '../src/keys/signJws.js';
import {
  BENCH_AUDIENCE,
  BENCH_CLIENT_ID,
  BENCH_CLIENT_SECRET,
  BENCH_ISSUER,
  BENCH_SCOPE,
  TOKEN_PATH,
} from './lib/benchClaims.js';
import { announce, closeServer, listenLoopback, onStop } from './lib/childProtocol.js';

const BODY_LIMIT = 16_384;
const LIFETIME_S = 3600;

const { values, positionals } = parseArgs({
  options: { signer: { type: 'string', default: 'node' } },
  allowPositionals: true,
  strict: true,
});
const [keyFile, kid] = positionals;
if (keyFile === undefined || kid === undefined || !['node', 'jose'].includes(values.signer)) {
  process.stderr.write('usage: node bareTokenServer.js <key.pem> <kid> [--signer node|jose]\n');
  process.exit(2);
}
const privateKey = createPrivateKey(readFileSync(keyFile, 'utf8'));
const digests = new Map([[BENCH_CLIENT_ID, sha256(BENCH_CLIENT_SECRET)]]);
const headerSegment = base64url(JSON.stringify({ alg: 'ES256', kid, typ: 'at+jwt' }));

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function base64url(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

async function issue(clientId: string, now: number): Promise<string> {
  const claims = {
    client_id: clientId,
    scope: BENCH_SCOPE,
    iss: BENCH_ISSUER,
    sub: clientId,
    aud: BENCH_AUDIENCE,
    iat: now,
    nbf: now,
    exp: now + LIFETIME_S,
    jti: randomBytes(16).toString('base64url'),
  };
  if (values.signer === 'jose') {
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
      .sign(privateKey);
  }
  const input = `${headerSegment}.${base64url(JSON.stringify(claims))}`;
  // The gateway's own signing call (bare KeyObject, DER → r‖s): with an options object
  // Node 24 throws and catches two TypeErrors per call, which would slow the reference.
  const signature = signJws('ES256', privateKey, Buffer.from(input));
  return `${input}.${signature.toString('base64url')}`;
}

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  if (req.method !== 'POST' || req.url !== TOKEN_PATH) {
    req.resume();
    res.writeHead(404).end();
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= BODY_LIMIT) chunks.push(chunk);
  });
  req.on('end', () => {
    if (size > BODY_LIMIT) {
      res.writeHead(413).end();
      return;
    }
    let body: { clientId?: unknown; clientSecret?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400).end();
      return;
    }
    const { clientId, clientSecret } = body;
    const expected = typeof clientId === 'string' ? digests.get(clientId) : undefined;
    const given = sha256(typeof clientSecret === 'string' ? clientSecret : '');
    if (
      typeof clientId !== 'string' ||
      expected === undefined ||
      !timingSafeEqual(expected, given)
    ) {
      res.writeHead(401).end();
      return;
    }
    const now = Math.floor(Date.now() / 1000);
    issue(clientId, now).then(
      (token) => {
        const result = JSON.stringify({
          token_de_acesso: token,
          expira_em_segundos: LIFETIME_S,
          expira_em: new Date((now + LIFETIME_S) * 1000).toISOString(),
          tipo_de_token: 'Bearer',
          escopo: BENCH_SCOPE,
        });
        res.writeHead(200, {
          'content-type': 'application/json',
          'cache-control': 'no-store',
          'content-length': Buffer.byteLength(result),
        });
        res.end(result);
      },
      () => res.writeHead(500).end(),
    );
  });
});

const url = await listenLoopback(server);
announce({ url, clientId: BENCH_CLIENT_ID, clientSecret: BENCH_CLIENT_SECRET });
onStop(async () => {
  await closeServer(server);
  return undefined;
});
