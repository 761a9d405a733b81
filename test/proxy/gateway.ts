/**
 * A gateway-shaped test server: parses the target, matches the route, and hands the request
 * to the real forwarder and WebSocket proxy with a hand-built principal. Failures are
 * answered as problem details, like the http layer does.
 */
import { once } from 'node:events';
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { TestContext } from 'node:test';
import type { RouteConfig } from '../../src/config/types.js';
import { parseRequestTarget } from '../../src/domain/requestPath.js';
import { isPortariaError, PortariaError } from '../../src/errors.js';
import { TrustedProxies } from '../../src/lib/trustedProxies.js';
import { createForwarder, type ForwarderHooks } from '../../src/proxy/forwarder.js';
import { createHeaderPolicy } from '../../src/proxy/headers.js';
import { compileRouteTable } from '../../src/proxy/routeTable.js';
import { writeSocketProblem } from '../../src/proxy/socketProblem.js';
import { createWebSocketProxy } from '../../src/proxy/webSocketProxy.js';
import { IDENTITY_HEADERS, principal } from './fixtures.js';

export const PROBLEM_BASE = 'urn:portaria:problem:';

export interface HookCall {
  readonly hook: 'upstreamResponse' | 'upstreamError';
  readonly routeId: string;
  readonly value: number | string;
  readonly durationMs?: number;
}

export interface TestGateway {
  readonly url: string;
  readonly port: number;
  readonly hookCalls: HookCall[];
  /** Request ids handed out so far, in order. */
  readonly requestIds: string[];
}

/** Listens on 127.0.0.1:0; cleanup destroys every connection, upgraded ones included. */
export async function listen(t: TestContext, server: Server): Promise<number> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return (server.address() as AddressInfo).port;
}

export function route(id: string, prefix: string, upstream: string, timeoutMs = 5000): RouteConfig {
  return { id, prefix, upstream, scopes: [], timeoutMs, audience: null };
}

function writeProblem(res: ServerResponse, error: unknown, instancia: string): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  if (!isPortariaError(error)) {
    res.writeHead(500).end();
    return;
  }
  const body = JSON.stringify({
    tipo: PROBLEM_BASE + error.code,
    titulo: error.title,
    status: error.status,
    detalhe: error.detail,
    instancia,
  });
  res.writeHead(error.status, { 'content-type': 'application/problem+json' }).end(body);
}

export async function startGateway(
  t: TestContext,
  routes: RouteConfig[],
  options: { connections?: number; trustedProxies?: readonly string[] } = {},
): Promise<TestGateway> {
  const table = compileRouteTable({
    routes,
    upstream: { default: null, timeoutMs: 5000, connections: 8 },
  });
  const headerPolicy = createHeaderPolicy({
    identityHeaders: IDENTITY_HEADERS,
    forwardAuthorization: true,
    trustedProxies: new TrustedProxies(options.trustedProxies ?? []),
    forwardCallerHeaders: [],
  });
  const hookCalls: HookCall[] = [];
  const hooks: ForwarderHooks = {
    upstreamResponse(routeId, durationMs, statusCode) {
      hookCalls.push({ hook: 'upstreamResponse', routeId, value: statusCode, durationMs });
    },
    upstreamError(routeId, kind) {
      hookCalls.push({ hook: 'upstreamError', routeId, value: kind });
    },
  };
  const forwarder = createForwarder({
    routesOrigins: table.origins,
    connections: options.connections ?? 16,
    headerPolicy,
    hooks,
  });
  const webSockets = createWebSocketProxy({ headerPolicy, problemTypeBase: PROBLEM_BASE, hooks });
  const requestIds: string[] = [];
  let counter = 0;

  function resolveTarget(req: IncomingMessage) {
    const requestId = `req-${++counter}`;
    requestIds.push(requestId);
    const target = parseRequestTarget(req.url ?? '');
    const matched = table.match(target.path);
    if (matched === null) throw new PortariaError('not-found', 'No route for this path.');
    const ctx = {
      requestId,
      peerAddress: req.socket.remoteAddress,
      proto: 'http' as const,
      upstreamCut: undefined,
      upstreamMs: undefined,
    };
    return { target, matched, ctx };
  }

  const server = http.createServer((req, res) => {
    let instancia = req.url ?? '';
    try {
      const { target, matched, ctx } = resolveTarget(req);
      instancia = `${target.path}#${ctx.requestId}`;
      forwarder
        .forward(req, res, matched, target, principal(), ctx)
        .catch((error: unknown) => writeProblem(res, error, instancia));
    } catch (error) {
      writeProblem(res, error, instancia);
    }
  });
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
    try {
      const { target, matched, ctx } = resolveTarget(req);
      webSockets.upgrade(req, socket, head, matched, target, principal(), ctx);
    } catch (error) {
      socket.on('error', () => {});
      writeSocketProblem(socket, error as PortariaError, req.url ?? '', PROBLEM_BASE);
    }
  });
  const port = await listen(t, server);
  t.after(async () => {
    webSockets.close();
    await forwarder.close();
  });
  return { url: `http://127.0.0.1:${port}`, port, hookCalls, requestIds };
}

export interface Reply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

/** One request on a fresh connection; resolves with the whole reply. */
export function send(
  url: string,
  options: http.RequestOptions & { body?: Buffer | string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const { body, ...requestOptions } = options;
    const req = http.request(url, { agent: false, ...requestOptions }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
