/**
 * Test fixture: a real JWKS server on 127.0.0.1 port 0 that counts requests and can be
 * switched between behaviours (serve a set, slow, hang, trickle, 500, reset, garbage,
 * oversized, redirect, stopped), plus issuer keys and configs. Torn down in `t.after`.
 */
import type { JsonWebKey, KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { TestContext } from 'node:test';
import { SignJWT } from 'jose';
import type { IssuerConfig } from '../../src/config/types.js';
import type { FetchOutcome, FetchTrigger } from '../../src/issuers/issuerKeySet.js';
import { newKeyPair } from './keyPairs.js';

export type Behaviour = (req: IncomingMessage, res: ServerResponse, n: number) => void;

export interface JwksServer {
  readonly url: string;
  /** Requests received, in order (path), counted on arrival. */
  readonly paths: string[];
  readonly count: () => number;
  behaviour: Behaviour;
  /** Closes the listener and its connections (→ connection refused). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  restart(): Promise<void>;
  /** Runs `fn` after `ms`; the timer is cleared at teardown. */
  later(ms: number, fn: () => void): void;
}

export async function startJwksServer(t: TestContext, initial: Behaviour): Promise<JwksServer> {
  const timers = new Set<NodeJS.Timeout>();
  const paths: string[] = [];
  let server: Server;
  let port = 0;
  const jwks: JwksServer = {
    url: '',
    paths,
    count: () => paths.length,
    behaviour: initial,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    async restart() {
      server = listener();
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    later(ms, fn) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        fn();
      }, ms);
      timers.add(timer);
    },
  };
  const listener = () =>
    createServer((req, res) => {
      paths.push(req.url ?? '');
      jwks.behaviour(req, res, paths.length);
    });
  server = listener();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
  (jwks as { url: string }).url = `http://127.0.0.1:${port}/jwks`;
  t.after(async () => {
    for (const timer of timers) clearTimeout(timer);
    if (server.listening) await jwks.stop();
  });
  return jwks;
}

export const serve =
  (document: unknown): Behaviour =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(document));
  };

export const status =
  (code: number): Behaviour =>
  (_req, res) => {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end('{}');
  };

/** Accepts the request and never answers. */
export const hang = (): Behaviour => () => {};

/**
 * Answers 200 and then one space every `everyMs`, forever: a body with no end. `closed`
 * runs when the client gives the connection up.
 */
export const trickle =
  (everyMs = 100, closed?: () => void): Behaviour =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"keys": [');
    const timer = setInterval(() => res.write(' '), everyMs);
    res.on('close', () => {
      clearInterval(timer);
      closed?.();
    });
  };

export const reset = (): Behaviour => (req) => req.socket.destroy();

export const garbage = (): Behaviour => (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"keys": [ this is not json');
};

/** 300 KiB; `declared` sends a Content-Length, otherwise the body is chunked. */
export const oversized =
  (declared: boolean): Behaviour =>
  (_req, res) => {
    const body = JSON.stringify({ keys: [], padding: 'x'.repeat(300 * 1024) });
    res.writeHead(200, {
      'content-type': 'application/json',
      ...(declared ? { 'content-length': Buffer.byteLength(body) } : {}),
    });
    if (declared) res.end(body);
    else {
      for (let i = 0; i < body.length; i += 16 * 1024) res.write(body.slice(i, i + 16 * 1024));
      res.end();
    }
  };

export const redirect =
  (location: string): Behaviour =>
  (_req, res) => {
    res.writeHead(302, { location });
    res.end();
  };

export interface TestKey {
  readonly kid: string;
  readonly privateKey: KeyObject;
  readonly jwk: JsonWebKey & { kid: string };
}

export function ecKey(kid: string, extra: Record<string, unknown> = {}): TestKey {
  const { privateKey, publicKey } = newKeyPair('ec', { namedCurve: 'P-256' });
  return { kid, privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, ...extra } };
}

export const jwksOf = (...keys: TestKey[]) => ({ keys: keys.map((k) => k.jwk) });

/** A compact JWS signed by `key` (ES256), to prove a looked-up key really verifies. */
export function signedBy(key: TestKey, alg = 'ES256'): Promise<string> {
  return new SignJWT({ sub: 'someone' })
    .setProtectedHeader({ alg, kid: key.kid })
    .setIssuedAt()
    .sign(key.privateKey);
}

export function issuerConfig(overrides: Partial<IssuerConfig> = {}): IssuerConfig {
  return {
    id: 'partner',
    issuer: 'https://idp.partner.test',
    jwksUri: null,
    allowPlainHttp: false,
    keyFile: null,
    audiences: ['partner-api'],
    algorithms: ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256'],
    clockSkewSeconds: 30,
    requireTyp: false,
    maxLifetimeSeconds: 86_400,
    cacheMaxAgeSeconds: 600,
    cooldownSeconds: 30,
    maxStalenessSeconds: 3600,
    fetchTimeoutMs: 2000,
    ...overrides,
  };
}

export interface FetchEvent {
  readonly issuer: string;
  readonly trigger: FetchTrigger;
  readonly outcome: FetchOutcome;
}

/** Hooks that record every fetch outcome. */
export function recordingHooks(): {
  events: FetchEvent[];
  hooks: { fetch: (issuer: string, trigger: FetchTrigger, outcome: FetchOutcome) => void };
} {
  const events: FetchEvent[] = [];
  return {
    events,
    hooks: { fetch: (issuer, trigger, outcome) => events.push({ issuer, trigger, outcome }) },
  };
}

/** Rejects when `promise` has not settled within `ms` (so a hung wait fails, not hangs). */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
