/**
 * A refusal that closes the connection while the client is still sending its body is
 * read by the client (RFC 9112 §9.6: the gateway half-closes after the answer and reads
 * and drops what still arrives, within bounds, before it closes), and a client that
 * never stops sending is cut off at those bounds.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { LINGER_MAX_BYTES, LINGER_MAX_MS } from '../../src/lib/lingeringClose.js';
import { startGateway, TOKEN_PATH } from '../helpers/fixture.js';
import { statusOf } from '../helpers/rawHttp.js';

const TRIES = 100;
const BODY_BYTES = 2 * 1024 * 1024;
const PIECE = Buffer.alloc(64 * 1024, 'a');

interface Delivery {
  /** Everything the client read. */
  readonly raw: string;
  /** The socket error the client saw, if any (`EPIPE`, `ECONNRESET`). */
  readonly error: string | undefined;
  /** Milliseconds from the first byte of the answer to the connection's close. */
  readonly closedAfterMs: number;
}

/**
 * Sends `head`, then `body` pieces (`gapMs` apart, else one per turn of the event loop),
 * and only then reads, as many clients do (Python's http.client, Java's
 * HttpURLConnection); `endless` never stops sending, not even after the gateway's FIN,
 * and reads all the while. Resolves once the connection closed.
 */
function sendWhileReading(
  url: string,
  head: string,
  body: { pieces: readonly Buffer[]; gapMs?: number } | { endless: Buffer },
): Promise<Delivery> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const endless = 'endless' in body;
    const socket = connect({ host: hostname, port: Number(port), allowHalfOpen: endless });
    const chunks: Buffer[] = [];
    let error: string | undefined;
    let answeredAt = 0;
    const guard = setTimeout(() => socket.destroy(), LINGER_MAX_MS * 4);
    socket.on('data', (chunk: Buffer) => {
      answeredAt ||= performance.now();
      chunks.push(chunk);
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error ??= e.code ?? e.message;
    });
    socket.on('close', () => {
      clearTimeout(guard);
      resolve({
        raw: Buffer.concat(chunks).toString('latin1'),
        error,
        closedAfterMs: answeredAt === 0 ? Number.NaN : performance.now() - answeredAt,
      });
    });
    socket.write(head);
    if ('pieces' in body) {
      // The next piece once the last one is sent: the gateway answers while the body
      // still arrives, as over any real network.
      socket.pause();
      const { pieces, gapMs } = body;
      const next = (i: number): void => {
        const piece = pieces[i];
        if (piece === undefined) socket.resume();
        else if (!socket.destroyed) {
          socket.write(piece, (e) => {
            if (e) return;
            if (gapMs === undefined) setImmediate(next, i + 1);
            else setTimeout(next, gapMs, i + 1);
          });
        }
      };
      next(0);
      return;
    }
    const more = (): void => {
      while (!socket.destroyed && socket.writable && socket.write(body.endless));
    };
    socket.on('drain', more);
    more();
  });
}

/** `bytes` of body as `Content-Length` pieces, or as chunks ending with the last chunk. */
function bodyPieces(bytes: number, chunked: boolean): Buffer[] {
  const pieces: Buffer[] = [];
  for (let sent = 0; sent < bytes; sent += PIECE.length) {
    const piece = PIECE.subarray(0, Math.min(PIECE.length, bytes - sent));
    pieces.push(
      chunked
        ? Buffer.concat([
            Buffer.from(`${piece.length.toString(16)}\r\n`),
            piece,
            Buffer.from('\r\n'),
          ])
        : piece,
    );
  }
  if (chunked) pieces.push(Buffer.from('0\r\n\r\n'));
  return pieces;
}

function postHead(path: string, contentType: string, framing: string): string {
  return `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${contentType}\r\n${framing}\r\n`;
}

const FRAMINGS = {
  'Content-Length': `Content-Length: ${BODY_BYTES}\r\n`,
  chunked: 'Transfer-Encoding: chunked\r\n',
} as const;

const ENDPOINTS = {
  'the token operation': [TOKEN_PATH, 'application/json'],
  'the OAuth token endpoint': ['/oauth2/token', 'application/x-www-form-urlencoded'],
} as const;

describe('a refusal sent while the body still arrives is read by the client', () => {
  for (const [endpoint, [path, contentType]] of Object.entries(ENDPOINTS)) {
    for (const [framing, field] of Object.entries(FRAMINGS)) {
      test(`${endpoint}, 2 MB ${framing}: the 413 is read ${TRIES} times out of ${TRIES}`, async (t) => {
        const gw = await startGateway(t);
        const head = postHead(path, contentType, field);
        const pieces = bodyPieces(BODY_BYTES, framing === 'chunked');
        const missed: string[] = [];
        for (let i = 0; i < TRIES; i++) {
          const { raw, error } = await sendWhileReading(gw.url, head, { pieces });
          if (statusOf(raw) !== 413)
            missed.push(`try ${i}: ${error ?? 'no error'}, read ${raw.length} bytes`);
        }
        assert.deepEqual(missed, []);
      });
    }
  }

  test('a body with both Content-Length and Transfer-Encoding, 2 MB still arriving: the 400 is read', async (t) => {
    const gw = await startGateway(t);
    const head = postHead(
      TOKEN_PATH,
      'application/json',
      `${FRAMINGS['Content-Length']}${FRAMINGS.chunked}`,
    );
    const pieces = bodyPieces(BODY_BYTES, true);
    const missed: string[] = [];
    for (let i = 0; i < TRIES / 4; i++) {
      const { raw, error } = await sendWhileReading(gw.url, head, { pieces });
      if (statusOf(raw) !== 400)
        missed.push(`try ${i}: ${error ?? 'no error'}, read ${raw.length} bytes`);
    }
    assert.deepEqual(missed, []);
  });

  test('a body slower than server.requestTimeoutMs, still arriving: the 408 is read', async (t) => {
    const gw = await startGateway(t, {
      settings: () => ({ server: { headersTimeoutMs: 500, requestTimeoutMs: 1000 } }),
    });
    // 12 KiB (within the body limit) in 2.4 s: the 408 comes after about 1 s, while the
    // body still arrives.
    const bytes = 12 * 1024;
    const head = postHead(TOKEN_PATH, 'application/json', `Content-Length: ${bytes}\r\n`);
    const pieces = Array.from({ length: 12 }, () => PIECE.subarray(0, 1024));
    for (let i = 0; i < 3; i++) {
      const { raw, error } = await sendWhileReading(gw.url, head, { pieces, gapMs: 200 });
      assert.equal(
        statusOf(raw),
        408,
        `try ${i}: ${error ?? 'no error'}, read ${raw.length} bytes`,
      );
    }
  });

  test('a client that never stops sending reads the 413 and is cut off within the bounds', async (t) => {
    const gw = await startGateway(t);
    const { raw, closedAfterMs } = await sendWhileReading(
      gw.url,
      postHead(TOKEN_PATH, 'application/json', FRAMINGS['Content-Length']),
      { endless: PIECE },
    );
    assert.equal(statusOf(raw), 413);
    // Loopback carries LINGER_MAX_BYTES in far less than LINGER_MAX_MS: the byte bound cuts.
    assert.ok(closedAfterMs < LINGER_MAX_MS, `closed ${closedAfterMs} ms after the answer`);
    assert.ok(LINGER_MAX_BYTES > BODY_BYTES);
  });
});
