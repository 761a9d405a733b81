/**
 * Writing responses. Every refusal is problem details (RFC 9457 semantics with the
 * contract's field names: tipo, titulo, status, detalhe, instancia) as
 * `application/problem+json`; an unexpected failure is a bare 500 with no body.
 */
import type { ServerResponse } from 'node:http';
import type { PortariaError } from '../errors.js';

export interface ProblemBody {
  tipo: string;
  titulo: string;
  status: number;
  detalhe: string;
  instancia: string;
}

export function problemBody(error: PortariaError, typeBase: string, instance: string): ProblemBody {
  return {
    tipo: `${typeBase}${error.code}`,
    titulo: error.title,
    status: error.status,
    detalhe: error.detail,
    instancia: instance,
  };
}

/** `instancia`: the request path (never the query, which may hold secrets) and request id. */
/** A request target without its query. */
export function pathOnly(url: string | undefined): string {
  if (url === undefined) return '';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

export function instanceOf(path: string, requestId: string): string {
  const shown = path.length > 256 ? path.slice(0, 256) : path;
  return `${shown}#${requestId}`;
}

export function sendProblem(
  res: ServerResponse,
  error: PortariaError,
  typeBase: string,
  instance: string,
  closeConnection = false,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(problemBody(error, typeBase, instance));
  res.statusCode = error.status;
  res.setHeader('content-type', 'application/problem+json');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.setHeader('cache-control', 'no-store');
  // The body echoes request paths and property names: never to be sniffed as HTML.
  res.setHeader('x-content-type-options', 'nosniff');
  if (error.headers)
    for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  if (closeConnection) res.setHeader('connection', 'close');
  res.end(body);
}

/** A bare 500: nothing about the failure leaves the process. */
export function sendServerError(res: ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.statusCode = 500;
  res.setHeader('content-length', 0);
  res.setHeader('cache-control', 'no-store');
  res.end();
}

export function sendJson(
  res: ServerResponse,
  status: number,
  json: string,
  headers: Readonly<Record<string, string>>,
  headOnly = false,
): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.setHeader('content-length', Buffer.byteLength(json));
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.end(headOnly ? undefined : json);
}
