/**
 * A JSON document served as is on GET and HEAD (the public key set, the OpenAPI
 * description): serialized once, answered without work per request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PortariaError } from '../errors.js';
import { sendJson } from './replies.js';

export class StaticDocument {
  readonly #json: string;
  readonly #headers: Readonly<Record<string, string>>;

  constructor(document: unknown, cacheControl: string) {
    this.#json = JSON.stringify(document);
    this.#headers = { 'cache-control': cacheControl };
  }

  serve(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new PortariaError('method-not-allowed', 'This document accepts GET and HEAD only.', {
        reason: 'method',
        headers: { allow: 'GET, HEAD' },
      });
    }
    sendJson(res, 200, this.#json, this.#headers, req.method === 'HEAD');
  }
}
