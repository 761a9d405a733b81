/**
 * One download of an issuer's JWKS document (RFC 7517 §5): `GET` with redirects refused,
 * only a 200 counts, the body read incrementally and abandoned past `MAX_JWKS_BYTES`,
 * then imported by the JWK rules of `issuerJwks.ts`. The download owns its deadline
 * (`timeoutMs`, headers and body together): one controller, aborted by a timer it holds
 * or by the caller's signal. Each failure carries its `FetchOutcome` (a metric label);
 * caching and retries belong to `RemoteKeySet`.
 */
import { type ImportedKey, importJwks, skippedSummary } from './issuerJwks.js';

export type FetchOutcome = 'ok' | 'error' | 'timeout' | 'too-large' | 'invalid';

export const MAX_JWKS_BYTES = 256 * 1024;

class FetchFailure extends Error {
  readonly outcome: FetchOutcome;
  constructor(outcome: FetchOutcome, message: string) {
    super(message);
    this.outcome = outcome;
  }
}

export interface JwksSource {
  readonly issuerId: string;
  readonly uri: string;
  readonly algorithms: readonly string[];
  readonly fetch: typeof fetch;
  readonly log: ((event: string, detail: Record<string, unknown>) => void) | undefined;
  /** The whole download's deadline, from the request to the body's last byte. */
  readonly timeoutMs: number;
}

/**
 * The usable keys of the document at `source.uri`; rejects with a `FetchFailure`, a
 * `TimeoutError` at the deadline, or `cancel`'s reason once it aborts.
 */
export async function downloadJwks(
  source: JwksSource,
  cancel: AbortSignal,
): Promise<Map<string, ImportedKey>> {
  cancel.throwIfAborted();
  const controller = new AbortController();
  const { signal } = controller;
  const onCancel = () => controller.abort(cancel.reason);
  cancel.addEventListener('abort', onCancel, { once: true });
  // A timer of our own, not AbortSignal.timeout: inside AbortSignal.any Node 20 holds that
  // signal weakly, and once garbage-collected it never fires. The timer list holds this one.
  const timer = setTimeout(
    () =>
      controller.abort(
        new DOMException(`no complete answer within ${source.timeoutMs} ms`, 'TimeoutError'),
      ),
    source.timeoutMs,
  );
  timer.unref();
  const aborted = new Promise<never>((_, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
  try {
    // The race makes the deadline hold even if a `fetch` ignored its signal.
    return await Promise.race([download(source, signal), aborted]);
  } finally {
    clearTimeout(timer);
    cancel.removeEventListener('abort', onCancel);
  }
}

async function download(
  source: JwksSource,
  signal: AbortSignal,
): Promise<Map<string, ImportedKey>> {
  const response = await source.fetch(source.uri, {
    signal,
    headers: { accept: 'application/json' },
    redirect: 'error',
  });
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => undefined);
    throw new FetchFailure('error', `HTTP ${response.status}`);
  }
  const text = await readBounded(response, MAX_JWKS_BYTES, signal);
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new FetchFailure('invalid', 'the body is not JSON');
  }
  const imported = await importJwks(document, source.algorithms);
  signal.throwIfAborted();
  if (imported === null) throw new FetchFailure('invalid', 'not an object with a "keys" array');
  if (imported.skipped.length > 0) {
    source.log?.('issuer keys skipped', {
      issuer: source.issuerId,
      ...skippedSummary(imported.skipped),
    });
  }
  if (imported.keys.size === 0) throw new FetchFailure('invalid', 'no usable key');
  return imported.keys;
}

/**
 * Reads the body as UTF-8, abandoning it once more than `limit` bytes arrived or `signal`
 * aborts (the stream is cancelled, so the connection is released, not left trickling).
 */
async function readBounded(
  response: Response,
  limit: number,
  signal: AbortSignal,
): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > limit) {
    await response.body?.cancel().catch(() => undefined);
    throw new FetchFailure('too-large', `body over ${limit} bytes`);
  }
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const onAbort = () => void reader.cancel(signal.reason).catch(() => undefined);
  signal.addEventListener('abort', onAbort, { once: true });
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      signal.throwIfAborted();
      const { done, value } = await reader.read();
      // A cancelled reader ends the stream: an abort is not a complete body.
      signal.throwIfAborted();
      if (done) break;
      total += value.byteLength;
      if (total > limit) {
        await reader.cancel().catch(() => undefined);
        throw new FetchFailure('too-large', `body over ${limit} bytes`);
      }
      chunks.push(value);
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new FetchFailure('invalid', 'the body is not UTF-8');
  }
}

/** The metric label of a failed download. */
export function outcomeOf(error: unknown): FetchOutcome {
  if (error instanceof FetchFailure) return error.outcome;
  if (error instanceof Error && error.name === 'TimeoutError') return 'timeout';
  return 'error';
}

/** The error's message with its cause's code or message (fetch wraps network errors). */
export function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  if (typeof cause?.code === 'string') return `${error.message} (${cause.code})`;
  if (typeof cause?.message === 'string') return `${error.message} (${cause.message})`;
  return error.message;
}
