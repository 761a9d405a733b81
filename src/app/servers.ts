/**
 * The two node:http listeners — options, event wiring and Node's quirks in one home —
 * and listening on them.
 *
 * Public listener: the gateway's handlers for requests, 100-continue, other expectations,
 * CONNECT, WebSocket upgrades and declined upgrade offers; parser refusals answered with
 * problem details; Node's header-line count set to `server.maxHeaderLines`; every
 * connection tracked for the drain (shutdown.ts). With `server.tls` it is an HTTPS
 * listener with the same options and handlers (`tls/serverTls.ts` gives its TLS
 * options): the HTTP layer then runs on each connection's TLS socket, which is what is
 * tracked and closed in stages, beside the TCP socket under it (a client that connects
 * and never completes a handshake is cut like one that never sends a request). A failed
 * handshake is logged at debug. Admin listener: plain HTTP always, with the public
 * listener's time and size limits (Node's defaults would let a client trickle one
 * request for 300 s, holding a socket of the port probes depend on).
 */
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket, Server as TlsServer } from 'node:tls';
import { ConfigError } from '../config/configError.js';
import { variableName } from '../config/environment.js';
import type { Config } from '../config/types.js';
import { createClientErrorHandler } from '../http/clientErrors.js';
import { type DeclinedUpgrades, declinedUpgrades } from '../http/declinedUpgrade.js';
import type { PublicGateway } from '../http/publicGateway.js';
import { GatewayResponse } from '../http/requestScope.js';
import { lingeringClose } from '../lib/lingeringClose.js';
import { ACCESS_FIELDS } from '../observability/accessLine.js';
import type { Logger } from '../observability/logger.js';
import { offersWebSocket } from '../proxy/webSocketProxy.js';
import type { ServerTls } from '../tls/serverTls.js';

export interface PublicListener {
  readonly server: Server;
  /** Every open connection, idle or not (the drain reads them). */
  readonly connections: ReadonlySet<Socket>;
  /** Declined upgrade offers answered outside Node's parser (older Node). */
  readonly declined: DeclinedUpgrades;
}

export function createPublicListener(
  config: Config,
  gateway: PublicGateway,
  logger: Logger,
  tls: ServerTls | null = null,
): PublicListener {
  const options = {
    ServerResponse: GatewayResponse,
    headersTimeout: config.server.headersTimeoutMs,
    requestTimeout: config.server.requestTimeoutMs,
    keepAliveTimeout: config.server.keepAliveTimeoutMs,
    maxHeaderSize: config.server.maxHeaderBytes,
    // The gateway answers a missing Host itself, with problem details (singletonFields.ts).
    requireHostHeader: false,
    // Only WebSocket upgrades are taken up; newer Node sends other offers (h2c) to the
    // request listener (older Node: declinedUpgrade.ts). Not in @types/node yet.
    ...{ shouldUpgradeCallback: offersWebSocket },
    connectionsCheckingInterval: checkingInterval(config),
  };
  const handler = gateway.handleRequest as RequestListener;
  const server: Server =
    tls === null
      ? createServer(options, handler)
      : (createHttpsServer(
          { ...options, ...tls.serverOptions(config.server.headersTimeoutMs) },
          handler,
        ) as unknown as Server);
  // Node's count is per listener; lines past it are dropped (Node < 24) or refused.
  server.maxHeadersCount = config.server.maxHeaderLines;
  const connections = new Set<Socket>();
  const track = (socket: Socket): void => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  };
  // Node closes a connection after an answer saying `Connection: close` with
  // destroySoon: a close in stages instead, so a client still sending its body reads
  // the refusal (RFC 9112 §9.6; lingeringClose.ts). On the socket HTTP runs on.
  const closeInStages = (socket: Socket): void => {
    socket.destroySoon = () => lingeringClose(socket);
  };
  server.on('connection', (socket: Socket) => {
    track(socket);
    if (tls === null) closeInStages(socket);
  });
  if (tls !== null) {
    tls.attach(server as unknown as TlsServer);
    server.on('secureConnection', (socket: TLSSocket) => {
      // Refused by OpenSSL already (tls/serverTls.ts); Node's own guard as well.
      socket.disableRenegotiation();
      track(socket);
      closeInStages(socket);
    });
    server.on('tlsClientError', (error: NodeJS.ErrnoException, socket: TLSSocket) => {
      logger.debug({ reason: error.code ?? error.message }, 'TLS handshake failed');
      socket.destroy();
    });
  }
  if (config.server.halfClosedRequests === 'answer') answerAfterHalfClose(server);
  // An expectation other than 100-continue is ignored (RFC 9110 §10.1.1 allows it; Node
  // would answer a bare 417): the request is handled like any other, `Expect` not forwarded.
  server.on('checkExpectation', gateway.handleRequest);
  // 100-continue: `100 Continue` only once the request is accepted (handleContinue).
  server.on('checkContinue', gateway.handleContinue);
  // CONNECT (a tunnel request) is no method of this gateway: 405 problem details, not
  // Node's silent close.
  server.on('connect', (req: IncomingMessage, socket: Duplex) =>
    gateway.refuseConnect(req, socket),
  );
  // Older Node emits `upgrade` for offers other than WebSocket too (declinedUpgrade.ts).
  const declined = declinedUpgrades(
    server,
    { request: gateway.handleRequest, expectingContinue: gateway.handleContinue },
    config.server.requestTimeoutMs,
  );
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (offersWebSocket(req)) gateway.handleUpgrade(req, socket, head);
    else declined.answer(req, socket, head);
  });
  server.on(
    'clientError',
    createClientErrorHandler(
      config.problemTypeBase,
      (reason) => logger.info({ reason }, 'request refused by the HTTP parser'),
      (reqId, bytes) =>
        logger.info({ [ACCESS_FIELDS.requestId]: reqId, bytes }, 'bytes after the request ignored'),
      (code) => logger.info({ reason: code }, 'connection closed: TLS error'),
    ),
  );
  return { server, connections, declined };
}

/**
 * The HTTP decision listener (`authorizer/decisionGateway.ts`): the public listener's
 * time, size and header-line limits; responses are `GatewayResponse`s (the scope).
 */
export function createDecisionListener(config: Config, handler: RequestListener): Server {
  const server = createServer(
    {
      ServerResponse: GatewayResponse,
      headersTimeout: config.server.headersTimeoutMs,
      requestTimeout: config.server.requestTimeoutMs,
      keepAliveTimeout: config.server.keepAliveTimeoutMs,
      maxHeaderSize: config.server.maxHeaderBytes,
      connectionsCheckingInterval: checkingInterval(config),
    },
    handler,
  );
  server.maxHeadersCount = config.server.maxHeaderLines;
  return server;
}

export function createAdminListener(config: Config, handler: RequestListener): Server {
  const server = createServer(
    {
      headersTimeout: config.server.headersTimeoutMs,
      requestTimeout: config.server.requestTimeoutMs,
      maxHeaderSize: config.server.maxHeaderBytes,
      connectionsCheckingInterval: checkingInterval(config),
    },
    handler,
  );
  server.maxHeadersCount = config.server.maxHeaderLines;
  // Always on the admin listener: its answers hold no upstream work to cancel.
  answerAfterHalfClose(server);
  return server;
}

/**
 * Node checks the header and request timeouts on this timer (default 30 s): tied to the
 * configured timeout so a slow client is cut close to it.
 */
function checkingInterval(config: Config): number {
  return Math.min(1000, Math.ceil(config.server.headersTimeoutMs / 2));
}

/**
 * Listens on `host:port`; an address in use, not allowed or not on this machine is a
 * start-up problem naming the setting (`server` or `admin`) and its variable.
 */
export function listenOn(
  server: Server,
  host: string,
  port: number,
  setting: 'server' | 'admin' | 'authorizer' | 'authorizer.grpc',
): Promise<void> {
  return new Promise((resolve, reject) => {
    const fail = (error: NodeJS.ErrnoException) => {
      const why = LISTEN_ERRORS[error.code ?? ''];
      if (why === undefined) return reject(error);
      const variable = variableName([...setting.split('.'), 'port']);
      reject(
        new ConfigError([
          `${setting}.host/${setting}.port: cannot listen on ${host}:${port}: ${why} (${error.code}); change ${setting}.port (${variable}) or ${setting}.host`,
        ]),
      );
    };
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      resolve();
    });
  });
}

const LISTEN_ERRORS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the address is already in use (another process, or another Portaria)',
  EACCES: 'not permitted (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'no such address on this machine',
};

/** The listener's URL: `https:` for a TLS listener. */
export function urlOf(server: Server): string {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('server is not listening');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const scheme = 'setSecureContext' in server ? 'https' : 'http';
  return `${scheme}://${host}:${address.port}`;
}

/**
 * `server.halfClosedRequests: answer`. A client may send a complete request and then
 * half-close its connection (TCP FIN: `printf … | nc -N`, HTTP/1.0 clients, a balancer
 * passing the FIN on). Node's default (`httpAllowHalfOpen` false) aborts the requests in
 * flight on that FIN and closes the socket, so the upstream carried out a POST whose
 * client never got the answer. With this set, Node keeps the socket writable, sends the
 * answers to the requests already received, and closes the connection after the last
 * one (HAProxy's behaviour). A client that resets the connection still aborts its
 * request. The property is undocumented and untyped; test/gateway/halfClose fails if a
 * Node release drops it.
 */
function answerAfterHalfClose(server: Server): void {
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
}
