/**
 * The client certificate of a trusted proxy's header value: the format's parser, the
 * X.509 parse, the gateway's own checks (`certificateVerdict.ts`), and a cache by value.
 * Whether the peer is a trusted proxy, and how many lines came, the caller decides
 * (`http/certificateHeaderStep.ts`); this module never sees a request.
 *
 * Per header value, not per request: a partner sends the same certificate on every
 * request, so parsing and verification run once per distinct value, kept in a map of at
 * most `cacheSize` values, least recently used evicted (a value comes only from a
 * trusted proxy, but the map is bounded anyway). A cached value costs one map lookup of
 * the string, one clock read and a few comparisons: the verdict's dependence on time is
 * a schedule (expiry, a CRL's nextUpdate) read for now, so an entry never goes stale.
 * Refusals are not cached.
 *
 * A value longer than `MAX_HEADER_BYTES` is refused before it is parsed: a certificate
 * chain in URL-encoded PEM is a few KiB, and the bound also caps what the cache holds
 * (the default `server.maxHeaderBytes`, 16 KiB for all headers together, is the same).
 * Every refusal is a 400 `invalid-request` naming the header, never quoting it.
 */
import {
  type CertificateVerdict,
  type ClientCertificate,
  clientCertificate,
} from '../domain/clientCertificate.js';
import { PortariaError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { type ParsedCertificate, parseCertificate } from './certificateFields.js';
import type { CertificateTrust } from './certificateTrust.js';
import { type VerdictSchedule, verdictAt, verdictSchedule } from './certificateVerdict.js';
import {
  type CertificateHeaderFormat,
  HeaderFormatError,
  type PresentedCertificates,
} from './headerFormat.js';
import { parseEscapedPem } from './nginxHeader.js';
import { parseRfc9440 } from './rfc9440Header.js';
import { parseXfcc } from './xfccHeader.js';

/** Longest header value read (each field; RFC 9440's two fields each). */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Most intermediates taken from one value. */
const MAX_CHAIN = 8;
/** Distinct header values whose certificate is kept. */
export const DEFAULT_CACHE_SIZE = 1000;

/** RFC 9440 §2.3's chain field, read beside `Client-Cert`. */
export const RFC9440_CHAIN_HEADER = 'client-cert-chain';

export interface CertificateHeaderReaderOptions {
  readonly format: CertificateHeaderFormat;
  /** The certificate field's name, lower case. */
  readonly name: string;
  readonly trust: CertificateTrust;
  readonly clock: Clock;
  readonly cacheSize?: number;
}

/** One distinct value's outcome: its certificate per verdict, made when first needed. */
interface Entry {
  readonly der: Buffer;
  readonly schedule: VerdictSchedule;
  readonly byVerdict: Partial<Record<CertificateVerdict, ClientCertificate>>;
}

export class CertificateHeaderReader {
  /** The certificate field's name, lower case. */
  readonly name: string;
  /** RFC 9440's chain field (`client-cert-chain`); null for the other formats. */
  readonly chainName: string | null;
  readonly #format: CertificateHeaderFormat;
  readonly #trust: CertificateTrust;
  readonly #clock: Clock;
  readonly #capacity: number;
  readonly #entries = new Map<string, Entry>();
  #newest: Entry | undefined;

  constructor(options: CertificateHeaderReaderOptions) {
    this.name = options.name;
    this.chainName = options.format === 'rfc9440' ? RFC9440_CHAIN_HEADER : null;
    this.#format = options.format;
    this.#trust = options.trust;
    this.#clock = options.clock;
    this.#capacity = options.cacheSize ?? DEFAULT_CACHE_SIZE;
  }

  /** Values cached now. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The certificate of the certificate field's `value` (and, for RFC 9440, the chain
   * field's `chain`); throws a 400 PortariaError naming the field when they are not one
   * certificate.
   */
  read(value: string | undefined, chain?: string): ClientCertificate {
    const key = chain === undefined ? value : `${value ?? ''}\n${chain}`;
    let entry = key === undefined ? undefined : this.#entries.get(key);
    if (entry === undefined) {
      entry = this.#parse(value, chain);
      this.#remember(key as string, entry);
    } else if (entry !== this.#newest) {
      // Least recently used goes first: a Map iterates in insertion order.
      this.#entries.delete(key as string);
      this.#entries.set(key as string, entry);
      this.#newest = entry;
    }
    const verdict = verdictAt(entry.schedule, this.#clock.now());
    let certificate = entry.byVerdict[verdict];
    if (certificate === undefined) {
      certificate = clientCertificate(entry.der, 'header', verdict);
      entry.byVerdict[verdict] = certificate;
    }
    return certificate;
  }

  #remember(key: string, entry: Entry): void {
    if (this.#entries.size >= this.#capacity) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, entry);
    this.#newest = entry;
  }

  #parse(value: string | undefined, chain: string | undefined): Entry {
    if (value !== undefined && value.length > MAX_HEADER_BYTES) throw this.#tooLarge(this.name);
    if (chain !== undefined && chain.length > MAX_HEADER_BYTES) {
      throw this.#tooLarge(this.chainName ?? this.name);
    }
    let presented: PresentedCertificates;
    try {
      presented = this.#presented(value, chain);
    } catch (error) {
      if (!(error instanceof HeaderFormatError)) throw error;
      const field = error.field === 'chain' ? (this.chainName ?? this.name) : this.name;
      throw refusal(field, error.message, error.reason);
    }
    if (presented.chain.length > MAX_CHAIN) {
      throw refusal(this.#chainField, `holds more than ${MAX_CHAIN} intermediate certificates`);
    }
    const leaf = certificateOf(presented.leaf, this.name, 'is not an X.509 certificate');
    const intermediates = presented.chain.map((der) =>
      certificateOf(
        der,
        this.#chainField,
        'holds an intermediate that is not an X.509 certificate',
      ),
    );
    return {
      der: leaf.der,
      schedule: verdictSchedule(leaf, intermediates, this.#trust),
      byVerdict: {},
    };
  }

  get #chainField(): string {
    return this.chainName ?? this.name;
  }

  #presented(value: string | undefined, chain: string | undefined): PresentedCertificates {
    switch (this.#format) {
      case 'rfc9440':
        return parseRfc9440(value, chain);
      case 'xfcc':
        return parseXfcc(value ?? '');
      case 'nginx':
        return parseEscapedPem(value ?? '');
    }
  }

  #tooLarge(field: string): PortariaError {
    return new PortariaError(
      'invalid-request',
      `The ${field} header is longer than ${MAX_HEADER_BYTES} bytes.`,
      { reason: 'certificate-header-too-large' },
    );
  }
}

function refusal(
  field: string,
  problem: string,
  reason: PortariaError['reason'] = 'certificate-header-malformed',
): PortariaError {
  return new PortariaError('invalid-request', `The ${field} header ${problem}.`, { reason });
}

function certificateOf(der: Buffer, field: string, problem: string): ParsedCertificate {
  try {
    return parseCertificate(der);
  } catch {
    throw refusal(field, problem);
  }
}
