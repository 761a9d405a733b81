/**
 * Trace and span ids drawn from a pool of CSPRNG bytes (one system call per 128 traces,
 * not six `Math.random`s a request), and the sampling decision of a new trace made from
 * its id with the rule of the SDK's `TraceIdRatioBasedSampler`: the four 32-bit words of
 * the trace id XORed, recorded below `ratio × 0xffffffff` (`rootSamplingBound`).
 */
import { randomFillSync } from 'node:crypto';

/** A trace id and a span id: 16 + 8 random bytes. */
const TRACE_BYTES = 24;
/** Bytes drawn at once: enough for this many new traces. */
const POOL_BYTES = TRACE_BYTES * 128;

export class TraceIds {
  readonly #bound: number;
  readonly #pool = Buffer.alloc(POOL_BYTES);
  /** The pool in hex, converted once per refill: an id is then a slice of it. */
  #hex = '';
  #next = POOL_BYTES;

  /** `bound`: the root sampling bound (`0` never records, `0x1_0000_0000` always). */
  constructor(bound: number) {
    this.#bound = bound;
  }

  /**
   * A new trace: its `traceparent` (W3C Trace Context §3.2: version 00, trace id, span id,
   * flags) with the sampled flag `01` when the sampler records it, `00` when not.
   */
  newTrace(): string {
    const pool = this.#pool;
    const at = this.#take(TRACE_BYTES);
    const w0 = pool.readUInt32BE(at);
    const w1 = pool.readUInt32BE(at + 4);
    const w2 = pool.readUInt32BE(at + 8);
    const w3 = pool.readUInt32BE(at + 12);
    // All-zero ids are invalid (W3C Trace Context §3.2.2.3, §3.2.2.4): draw again.
    if ((w0 | w1 | w2 | w3) === 0) return this.newTrace();
    if ((pool.readUInt32BE(at + 16) | pool.readUInt32BE(at + 20)) === 0) return this.newTrace();
    const flags = (w0 ^ w1 ^ w2 ^ w3) >>> 0 < this.#bound ? '01' : '00';
    const hex = this.#hex;
    const h = 2 * at;
    return `00-${hex.slice(h, h + 32)}-${hex.slice(h + 32, h + 48)}-${flags}`;
  }

  /** A new span id, 16 hex digits, never all zero. */
  spanId(): string {
    const pool = this.#pool;
    const at = this.#take(8);
    if ((pool.readUInt32BE(at) | pool.readUInt32BE(at + 4)) === 0) return this.spanId();
    return this.#hex.slice(2 * at, 2 * at + 16);
  }

  /** The offset of `n` unused pool bytes, refilling the pool when it runs short. */
  #take(n: number): number {
    if (this.#next + n > POOL_BYTES) {
      randomFillSync(this.#pool);
      this.#hex = this.#pool.toString('hex');
      this.#next = 0;
    }
    const at = this.#next;
    this.#next = at + n;
    return at;
  }
}

/** Whether a `traceparent` made by `newTrace` is sampled. */
export function sampledTrace(traceparent: string): boolean {
  return traceparent.charCodeAt(54) === 0x31; // '1' of the flags `01`
}
