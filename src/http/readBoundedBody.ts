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
 *
 * Read with `data`/`end` listeners: a stream's async iterator costs several promises and
 * listeners per request on the token operation's path. Over the limit, the rest of the
 * body is read and dropped while the 413 goes out with `Connection: close`.
 */
export function readBoundedBody(
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
  return new Promise((resolve, reject) => new BodyReader(req, limit, resolve, reject));
}

/** One body being read; its listeners are removed once it settles. */
class BodyReader {
  readonly #req: IncomingMessage;
  readonly #limit: number;
  readonly #resolve: (text: string) => void;
  readonly #reject: (error: unknown) => void;
  readonly #chunks: Buffer[] = [];
  #size = 0;

  constructor(
    req: IncomingMessage,
    limit: number,
    resolve: (text: string) => void,
    reject: (error: unknown) => void,
  ) {
    this.#req = req;
    this.#limit = limit;
    this.#resolve = resolve;
    this.#reject = reject;
    if (req.destroyed) {
      reject(prematureClose());
      return;
    }
    req.on('data', this.#onData);
    req.on('end', this.#onEnd);
    req.on('error', this.#onError);
    req.on('close', this.#onClose);
  }

  readonly #onData = (chunk: Buffer): void => {
    this.#size += chunk.length;
    if (this.#size > this.#limit) {
      this.#settle();
      // Still flowing with no reader: what else arrives is dropped.
      this.#reject(new BodyTooLarge(this.#limit));
      return;
    }
    this.#chunks.push(chunk);
  };

  readonly #onEnd = (): void => {
    this.#settle();
    const chunks = this.#chunks;
    const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, this.#size);
    try {
      this.#resolve(utf8.decode(bytes));
    } catch {
      this.#reject(
        new PortariaError('invalid-request', 'The request body is not valid UTF-8.', {
          reason: 'body-not-utf8',
        }),
      );
    }
  };

  readonly #onError = (error: unknown): void => {
    this.#settle();
    this.#reject(error);
  };

  /** Closed before its end: the client left (an error, if any, came first). */
  readonly #onClose = (): void => {
    this.#settle();
    this.#reject(prematureClose());
  };

  #settle(): void {
    const req = this.#req;
    req.off('data', this.#onData);
    req.off('end', this.#onEnd);
    req.off('error', this.#onError);
    req.off('close', this.#onClose);
  }
}

function prematureClose(): Error {
  return Object.assign(new Error('The request closed before its body ended.'), {
    code: 'ERR_STREAM_PREMATURE_CLOSE',
  });
}
