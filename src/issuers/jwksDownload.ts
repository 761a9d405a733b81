/**
 * One download of an issuer's JWKS document (RFC 7517 §5): `GET` with redirects refused,
 * only a 200 counts, the body read incrementally and abandoned past `MAX_JWKS_BYTES`,
 * then imported by the JWK rules of `issuerJwks.ts`. Each failure carries its
 * `FetchOutcome` (a metric label); caching and timing belong to `RemoteKeySet`.
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
}

/** The usable keys of the document at `source.uri`; rejects with a `FetchFailure` or abort. */
export async function downloadJwks(
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
  const text = await readBounded(response, MAX_JWKS_BYTES);
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new FetchFailure('invalid', 'the body is not JSON');
  }
  const imported = await importJwks(document, source.algorithms);
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

/** Reads the body as UTF-8, abandoning it once more than `limit` bytes arrived. */
async function readBounded(response: Response, limit: number): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > limit) {
    await response.body?.cancel().catch(() => undefined);
    throw new FetchFailure('too-large', `body over ${limit} bytes`);
  }
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw new FetchFailure('too-large', `body over ${limit} bytes`);
    }
    chunks.push(value);
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
