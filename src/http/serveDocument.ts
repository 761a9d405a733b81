/**
 * Serves a document of the gateway's own (`documents/`) on GET and HEAD; any other
 * method is refused with 405 naming those two.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StaticDocument } from '../documents/staticDocument.js';
import { PortariaError } from '../errors.js';
import { sendJson } from './replies.js';

export function serveDocument(
  req: IncomingMessage,
  res: ServerResponse,
  document: StaticDocument,
): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    throw new PortariaError('method-not-allowed', 'This document accepts GET and HEAD only.', {
      reason: 'method',
      headers: { allow: 'GET, HEAD' },
    });
  }
  sendJson(res, 200, document.json(), document.headers, req.method === 'HEAD');
}
