/**
 * Forwards a verified HTTP request to its upstream and streams the answer back: one undici
 * `Pool` per origin, one `dispatch` per request, both bodies streamed (backpressure). The route's
 * timeouts surface as 504; a failure before the response headers rejects with the public
 * problem, after them the client's response is cut. `dispatch` is the hot path: no
 * promise, one handler object and two flat header lists per request.
 *
 * The request body streams only when there is one (RFC 9112 §6.3). An upstream answering
 * before it arrived gets the client `Connection: close` (RFC 9112 §9.6: the rest has
 * nowhere to go). A 204 or 304 with `Content-Length` ends normally (undici would call the
 * absent body a length mismatch), the 204's field dropped (RFC 9110 §8.6). A transfer
 * coding other than chunked, which undici does not decode, is a 502 rather than a body
 * relayed with its coding stripped. 1xx answers are not relayed; undici refuses an
 * unsolicited 101 and a 100 (a 502), and the gateway never sends `Expect`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { Pool } from 'undici';
import type { ClientCertificate } from '../domain/clientCertificate.js';
import type { Principal } from '../domain/principal.js';
import type { RequestTarget } from '../domain/requestPath.js';
import type { ForwardedProto, HeaderPolicy } from './headers.js';
import type { CompiledRoute } from './routeTable.js';
import { setTraceFields, type UpstreamCall, type UpstreamTracer } from './traceFields.js';
import {
  classifyUpstreamError,
  type UpstreamErrorKind,
  upstreamProblem,
} from './upstreamErrors.js';

export interface ForwarderHooks {
  /** The upstream answered; `durationMs` runs from dispatch to the end of its body. */
  upstreamResponse?(routeId: string, durationMs: number, statusCode: number): void;
  /** The exchange with the upstream failed (not reported when the client went away). */
  upstreamError?(routeId: string, kind: UpstreamErrorKind): void;
}

export interface ForwardContext {
  readonly requestId: string;
  /** The TCP peer's address (`req.socket.remoteAddress`). */
  readonly peerAddress: string | undefined;
  readonly proto: ForwardedProto;
  /** The client certificate (for the `certificate.*` identity headers); null: none. */
  readonly certificate?: ClientCertificate | null;
  /** `x-fapi-interaction-id` under profile fapi-br, for the upstream (`headers.ts`). */
  readonly interactionId?: string | undefined;
  /**
   * Set by the forwarder when the upstream failed after the response's headers were sent
   * (the client got a truncated message): the access line must not read it as the client
   * going away. The caller's per-request scope carries it.
   */
  upstreamCut: UpstreamErrorKind | undefined;
  /** Set by the forwarder: milliseconds from dispatch to the end of the upstream response or its failure. */
  upstreamMs: number | undefined;
  /** The request's trace when tracing is on (the upstream call gets its span). */
  readonly trace?: UpstreamTracer | null;
  /**
   * Fields the gateway adds to the answer, `[name, value, …]` (the RateLimit fields), after
   * the upstream's own: a list field of the same name is then one list (RFC 9110 §5.3).
   */
  readonly addedResponseFields?: readonly string[] | null;
}

export interface ForwarderOptions {
  /** Every upstream origin of the route table; one pool each. */
  readonly routesOrigins: readonly string[];
  /** Keep-alive connections per origin. */
  readonly connections: number;
  readonly headerPolicy: HeaderPolicy;
  readonly hooks?: ForwarderHooks;
}

/**
 * A failure `dispatch` reports instead of rejecting (same cases as `forward`'s rejection),
 * one microtask after it happened, as a promise rejection would.
 */
export type ForwardFailure = (req: IncomingMessage, res: ServerResponse, error: Error) => void;

export interface Forwarder {
  forward(
    req: IncomingMessage,
    res: ServerResponse,
    route: CompiledRoute,
    target: RequestTarget,
    principal: Principal,
    ctx: ForwardContext,
  ): Promise<void>;
  /** `forward` without a promise: `onFailure` gets what `forward` would reject with. */
  dispatch(
    req: IncomingMessage,
    res: ServerResponse,
    route: CompiledRoute,
    target: RequestTarget,
    principal: Principal,
    ctx: ForwardContext,
    onFailure: ForwardFailure,
  ): void;
  /**
   * Makes the pool set match `origins` (after a route reload): new origins get a pool;
   * pools of origins no longer routed to finish their in-flight exchanges, then close.
   */
  setOrigins(origins: readonly string[]): void;
  /**
   * Closes every pool (call once no client is left to answer): in-flight exchanges may
   * end for a second, then are cut.
   */
  close(): Promise<void>;
}

/** Abort reason when the client is gone; never reported as an upstream failure. */
class ClientGoneError extends Error {
  readonly code = 'PORTARIA_CLIENT_GONE';
}

const NO_HOOKS: ForwarderHooks = Object.freeze({});
/** How long `close` waits for in-flight exchanges before cutting them. */
const CLOSE_WAIT_MS = 1000;

function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}

/** An upstream response the gateway cannot relay faithfully (classified `error`: 502). */
class UpstreamFramingError extends Error {
  readonly code = 'PORTARIA_UPSTREAM_FRAMING';
}

/** True when a `Transfer-Encoding` value names chunked alone (the only coding Node and undici decode). */
export function isChunkedOnly(value: string | string[]): boolean {
  return typeof value === 'string' && value.trim().toLowerCase() === 'chunked';
}

/** The exchange a response belongs to, for the one `close` listener all of them share. */
const EXCHANGE = Symbol('portaria.exchange');
type ExchangeResponse = ServerResponse & { [EXCHANGE]?: Exchange };

/** `close` listener of every forwarded response (Node calls it with the response as `this`). */
function onResponseClose(this: ExchangeResponse): void {
  this[EXCHANGE]?.clientClosed();
}

/** The dispatch handler of one forwarded request. */
class Exchange implements Dispatcher.DispatchHandler {
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  readonly #routeId: string;
  readonly #ctx: ForwardContext;
  readonly #policy: HeaderPolicy;
  readonly #hooks: ForwarderHooks;
  readonly #start: number;
  readonly #resolve: (() => void) | null;
  readonly #reject: ForwardFailure;
  /** The upstream call's span (tracing on). */
  readonly #call: UpstreamCall | null;
  /** This exchange's `drain` listener, made on the first backpressure. */
  #onDrain: (() => void) | null = null;
  #controller: Dispatcher.DispatchController | null = null;
  #statusCode = 0;
  #clientGone = false;
  #settled = false;

  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    routeId: string,
    ctx: ForwardContext,
    policy: HeaderPolicy,
    hooks: ForwarderHooks,
    resolve: (() => void) | null,
    reject: ForwardFailure,
    call: UpstreamCall | null,
  ) {
    this.#call = call;
    this.#req = req;
    this.#res = res;
    this.#routeId = routeId;
    this.#ctx = ctx;
    this.#policy = policy;
    this.#hooks = hooks;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#start = performance.now();
    // The shared listener stays attached once settled: `clientClosed` checks `#settled`.
    (res as ExchangeResponse)[EXCHANGE] = this;
    res.on('close', onResponseClose);
  }

  clientClosed(): void {
    if (this.#settled || this.#res.writableFinished) return;
    this.#clientGone = true;
    this.#controller?.abort(new ClientGoneError('client closed the connection'));
  }

  clientDrained(): void {
    this.#controller?.resume();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#clientGone) controller.abort(new ClientGoneError('client closed the connection'));
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return;
    const transferEncoding = headers['transfer-encoding'];
    if (transferEncoding !== undefined && !isChunkedOnly(transferEncoding)) {
      // A coding undici does not decode (`gzip, chunked`): dropping the hop-by-hop field
      // would pass the encoded bytes on as the content (RFC 9112 §6.1). Unusable: 502.
      controller.abort(new UpstreamFramingError('transfer coding other than chunked'));
      return;
    }
    // RFC 9110 §8.6: no Content-Length on a 204 (a 304 may carry one: it describes the
    // representation, and no body follows either way).
    if (statusCode === 204) headers['content-length'] = undefined;
    const list = this.#policy.downstreamResponseHeaderList(headers, this.#ctx.requestId);
    const added = this.#ctx.addedResponseFields;
    if (added != null) for (let i = 0; i < added.length; i++) list.push(added[i] as string);
    // The upstream answered before the client finished sending its body (an early 401 or
    // 413). That body's end is now nowhere to go — undici dropped the request stream — so
    // the client's connection cannot carry another request: say so and close it after
    // this response (RFC 9112 §9.6), instead of a keep-alive connection that stalls.
    if (!this.#req.complete && hasBody(this.#req)) list.push('connection', 'close');
    try {
      this.#res.writeHead(statusCode, list);
    } catch (error) {
      // A status or field Node will not send: the upstream's answer is unusable (502).
      controller.abort(error as Error);
      return;
    }
    this.#statusCode = statusCode;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.#res.write(chunk)) {
      controller.pause();
      this.#onDrain ??= () => this.clientDrained();
      this.#res.once('drain', this.#onDrain);
    }
  }

  onResponseEnd(): void {
    if (!this.#finish()) return;
    this.#res.end();
    this.#call?.end(this.#statusCode, undefined);
    this.#hooks.upstreamResponse?.(this.#routeId, this.#ctx.upstreamMs as number, this.#statusCode);
    this.#resolve?.();
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    // A 204 or 304 carrying Content-Length has no body by definition, but undici counts
    // the missing bytes as a length mismatch: the response is complete, end it normally.
    if (
      (this.#statusCode === 204 || this.#statusCode === 304) &&
      (error as { code?: unknown }).code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH'
    ) {
      this.onResponseEnd();
      return;
    }
    if (!this.#finish()) return;
    const req = this.#req;
    const clientAway =
      this.#clientGone ||
      error instanceof ClientGoneError ||
      this.#res.destroyed ||
      (req.destroyed && !req.complete);
    if (this.#call !== null) {
      this.#call.end(this.#statusCode, clientAway ? 'client_gone' : classifyUpstreamError(error));
    }
    if (!clientAway) {
      const kind = classifyUpstreamError(error);
      this.#hooks.upstreamError?.(this.#routeId, kind);
      if (this.#statusCode === 0) {
        const problem = upstreamProblem(kind, error);
        const reject = this.#reject;
        const res = this.#res;
        // A microtask later, as a promise rejection would be: never inside undici's call.
        queueMicrotask(() => reject(req, res, problem));
        return;
      }
      // The access line must not read this as the client going away (499).
      this.#ctx.upstreamCut = kind;
    }
    // Headers already sent, or nobody listening: cut the client's response short.
    this.#res.destroy();
    this.#resolve?.();
  }

  /** Settles once (false if already settled); the `close` listener stays, now inert. */
  #finish(): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    this.#ctx.upstreamMs = performance.now() - this.#start;
    if (this.#onDrain !== null) this.#res.removeListener('drain', this.#onDrain);
    return true;
  }
}

export function createForwarder(opts: ForwarderOptions): Forwarder {
  const pools = new Map<string, Pool>();
  /** Pools of origins no longer routed to, closing once their exchanges are done. */
  const retiring = new Set<Pool>();
  const setOrigins = (origins: readonly string[]) => {
    const wanted = new Set(origins);
    for (const origin of wanted) {
      if (!pools.has(origin)) {
        pools.set(origin, new Pool(origin, { connections: opts.connections, pipelining: 1 }));
      }
    }
    for (const [origin, pool] of pools) {
      if (wanted.has(origin)) continue;
      pools.delete(origin);
      retiring.add(pool);
      void pool.close().then(
        () => retiring.delete(pool),
        () => retiring.delete(pool),
      );
    }
  };
  setOrigins(opts.routesOrigins);
  const policy = opts.headerPolicy;
  const hooks = opts.hooks ?? NO_HOOKS;

  const dispatch = (
    req: IncomingMessage,
    res: ServerResponse,
    route: CompiledRoute,
    target: RequestTarget,
    principal: Principal,
    ctx: ForwardContext,
    resolve: (() => void) | null,
    reject: ForwardFailure,
  ): void => {
    const pool = pools.get(route.origin);
    if (pool === undefined) throw new Error(`no connection pool for route ${route.id}`);
    // The client left while its token was being verified (its response closed before an
    // exchange could listen for that): nobody is waiting for the answer, so the request
    // is not sent. Its access line was written when it closed (499).
    if (res.destroyed) {
      resolve?.();
      return;
    }
    const headers = policy.upstreamRequestHeaderList(req.headers, {
      principal,
      certificate: ctx.certificate ?? null,
      requestId: ctx.requestId,
      peerAddress: ctx.peerAddress,
      host: req.headers.host,
      proto: ctx.proto,
      interactionId: ctx.interactionId,
    });
    const call =
      ctx.trace?.upstream(
        req.method ?? 'GET',
        route.origin,
        route.basePath + target.path,
        route.id,
      ) ?? null;
    if (call !== null) setTraceFields(headers, call);
    pool.dispatch(
      {
        path: route.basePath + target.path + target.search,
        method: req.method ?? 'GET',
        // undici takes a string[] value as one field line per element, like the object form.
        headers: headers as string[],
        body: hasBody(req) ? req : null,
        headersTimeout: route.timeoutMs,
        bodyTimeout: route.timeoutMs,
      },
      new Exchange(req, res, route.id, ctx, policy, hooks, resolve, reject, call),
    );
  };

  return {
    forward(req, res, route, target, principal, ctx) {
      return new Promise<void>((resolve, reject) => {
        dispatch(req, res, route, target, principal, ctx, resolve, (_req, _res, error) =>
          reject(error),
        );
      });
    },

    dispatch(req, res, route, target, principal, ctx, onFailure) {
      dispatch(req, res, route, target, principal, ctx, null, onFailure);
    },

    setOrigins,

    async close() {
      // Called once the public server has closed every client connection: each exchange
      // then ends through its response's `close` (aborted, the client gone) and the pools
      // close. One still open a second later has nobody to answer — it would hold the
      // stop for ever, paused on a response that will never drain — so it is cut.
      const all = [...pools.values(), ...retiring];
      const closing = Promise.all(all.map((pool) => pool.close().catch(() => undefined)));
      const cut = setTimeout(() => {
        for (const pool of all) void pool.destroy().catch(() => undefined);
      }, CLOSE_WAIT_MS);
      await closing;
      clearTimeout(cut);
    },
  };
}
