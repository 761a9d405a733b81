/**
 * Token requests from a chosen loopback source address (Linux routes all of
 * 127.0.0.0/8 to loopback, so `localAddress: '127.0.0.2'` makes a distinct TCP peer),
 * one connection per request so the address is never reused by a pool.
 */
import { type IncomingHttpHeaders, request } from 'node:http';
import { CLIENT_ID, CLIENT_SECRET, TOKEN_PATH } from '../helpers/fixture.js';

export interface TokenReply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Record<string, unknown>;
}

export interface PostOptions {
  /** Source address (default 127.0.0.1). */
  readonly from?: string;
  readonly headers?: Record<string, string>;
}

export function postToken(
  baseUrl: string,
  payload: string,
  options: PostOptions = {},
): Promise<TokenReply> {
  const url = new URL(TOKEN_PATH, baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        localAddress: options.from ?? '127.0.0.1',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          ...options.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The JSON body of a token request. */
export function credentials(clientId = CLIENT_ID, clientSecret = CLIENT_SECRET): string {
  return JSON.stringify({ clientId, clientSecret });
}

/** Posts credentials from `from` and returns the status (and Retry-After, when present). */
export async function attempt(
  baseUrl: string,
  from: string,
  clientId = CLIENT_ID,
  clientSecret = CLIENT_SECRET,
): Promise<string> {
  const reply = await postToken(baseUrl, credentials(clientId, clientSecret), { from });
  const retryAfter = reply.headers['retry-after'];
  return retryAfter === undefined ? String(reply.status) : `${reply.status} after ${retryAfter}`;
}

/** Token limits with every limit off; tests switch on what they exercise. */
export function limitsOff(): Record<string, unknown> {
  return {
    perAddress: { enabled: false },
    perClient: { enabled: false },
    failedSecretBackoff: { enabled: false },
  };
}
