/**
 * A JSON document served on GET and HEAD (the public key set, the OpenAPI description).
 * The text comes from a function so a document that changes (the key set, on rotation
 * and reload) is served current; the function returns a pre-serialised string, so a
 * request does no serialisation work.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PortariaError } from '../errors.js';
import { sendJson } from './replies.js';

export class StaticDocument {
  readonly #json: () => string;
  readonly #headers: Readonly<Record<string, string>>;

  constructor(json: () => string, cacheControl: string) {
    this.#json = json;
    this.#headers = { 'cache-control': cacheControl };
  }

  /** A document that never changes, serialised once. */
  static of(document: unknown, cacheControl: string): StaticDocument {
    const json = JSON.stringify(document);
    return new StaticDocument(() => json, cacheControl);
  }

  serve(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new PortariaError('method-not-allowed', 'This document accepts GET and HEAD only.', {
        reason: 'method',
        headers: { allow: 'GET, HEAD' },
      });
    }
    sendJson(res, 200, this.#json(), this.#headers, req.method === 'HEAD');
  }
}
