/**
 * Reads a request body as UTF-8 text, never holding more than `limit` bytes.
 *
 * A declared `Content-Length` over the limit is refused before reading anything; a
 * chunked body is refused as soon as it crosses the limit. In both cases the caller
 * answers 413 with `Connection: close`, so the rest of the body is never read.
 * Compressed bodies are refused (415): decompression is where size limits are lost.
 */
import type { IncomingMessage } from 'node:http';
import { PortariaError } from '../errors.js';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export class BodyTooLarge extends PortariaError {
  constructor(limit: number) {
    super('payload-too-large', `The request body must not exceed ${limit} bytes.`, {
      reason: 'body-too-large',
    });
  }
}

/**
 * `beforeRead` runs once the declared length and encoding passed, just before the body is
 * read (the public listener sends a pending `100 Continue` there).
 */
export async function readBoundedBody(
  req: IncomingMessage,
  limit: number,
  beforeRead?: () => void,
): Promise<string> {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
    throw new PortariaError(
      'unsupported-media-type',
      'Compressed request bodies are not accepted.',
      {
        reason: 'content-encoding',
      },
    );
  }
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw new BodyTooLarge(limit);
  beforeRead?.();

  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new BodyTooLarge(limit);
    chunks.push(chunk as Buffer);
  }
  try {
    return utf8.decode(Buffer.concat(chunks, size));
  } catch {
    throw new PortariaError('invalid-request', 'The request body is not valid UTF-8.', {
      reason: 'body-not-utf8',
    });
  }
}
