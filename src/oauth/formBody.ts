/**
 * The body of an OAuth 2.0 endpoint request: `application/x-www-form-urlencoded`
 * (RFC 6749 §3.2, the WHATWG URL standard's serialisation) read within the body limit,
 * into one value per name.
 *
 * Stricter than a browser's parser, because a value read two ways is a value an attacker
 * chooses: malformed percent-encoding and bytes that are not UTF-8 are refused
 * (`invalid_request`) instead of kept literally or replaced; a parameter given twice is
 * refused (RFC 6749 §3.2: "MUST NOT be included more than once"). `resource` may be
 * repeated by RFC 8707 §2, but the gateway issues one audience per token, so a repeated
 * `resource` is `invalid_target`. A parameter without a value counts as omitted (RFC 6749
 * §3.1). Over the limit: 413, another media type: 415 (both problem details, thrown by
 * the HTTP layer's body reader or here).
 */
import { PortariaError } from '../errors.js';
import { isUtf8MediaType } from '../lib/mediaType.js';
import { OAuthError } from './oauthError.js';

/** What the endpoints read of a form request (the HTTP layer provides it). */
export interface FormCall {
  readonly contentType: string | undefined;
  /** The body as UTF-8 text, read within the size limit (throws 413 over it). */
  readBody(): Promise<string>;
}

const FORM_TYPE = 'application/x-www-form-urlencoded';
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Checks the media type, reads the bounded body and parses it. */
export async function readFormBody(call: FormCall): Promise<Map<string, string>> {
  requireFormMediaType(call.contentType);
  let text: string;
  try {
    text = await call.readBody();
  } catch (error) {
    // A body that is not UTF-8 is a malformed form, answered as such.
    if (error instanceof PortariaError && error.reason === 'body-not-utf8') {
      throw new OAuthError('invalid_request', 'The request body is not valid UTF-8.', {
        reason: 'form-malformed',
      });
    }
    throw error;
  }
  return parseForm(text);
}

/** `application/x-www-form-urlencoded`, optionally with `charset=utf-8`. */
export function isFormMediaType(header: string | undefined): boolean {
  return isUtf8MediaType(header, FORM_TYPE);
}

/** 415 unless the request carries a form (checked before limits and before the body). */
export function requireFormMediaType(contentType: string | undefined): void {
  if (!isFormMediaType(contentType)) {
    throw new PortariaError('unsupported-media-type', `Content-Type must be ${FORM_TYPE}.`, {
      reason: 'content-type',
    });
  }
}

/** One value per name; throws `OAuthError` for a malformed or repeated parameter. */
export function parseForm(text: string): Map<string, string> {
  const params = new Map<string, string>();
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decodeFormComponent(eq === -1 ? pair : pair.slice(0, eq));
    const value = eq === -1 ? '' : decodeFormComponent(pair.slice(eq + 1));
    if (name === '' || value === '') continue;
    if (params.has(name)) {
      if (name === 'resource') {
        throw new OAuthError(
          'invalid_target',
          'One resource per token request: send a single "resource" parameter.',
          { reason: 'several-resources' },
        );
      }
      throw new OAuthError(
        'invalid_request',
        `The parameter ${JSON.stringify(safeName(name))} is given more than once.`,
        { reason: 'form-repeated' },
      );
    }
    params.set(name, value);
  }
  return params;
}

/**
 * `+` is a space, `%XX` a byte; the bytes must be UTF-8 (WHATWG URL §5.1 with strict
 * percent-decoding). Also RFC 6749 §2.3.1's encoding of a Basic client id and secret.
 */
export function decodeFormComponent(text: string): string {
  if (text.indexOf('%') === -1) return text.indexOf('+') === -1 ? text : text.replaceAll('+', ' ');
  const bytes = Buffer.from(text.replaceAll('+', ' '), 'utf8');
  const out = Buffer.allocUnsafe(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    if (b !== 0x25) {
      out[n++] = b;
      continue;
    }
    const hi = hexValue(bytes[i + 1]);
    const lo = hexValue(bytes[i + 2]);
    if (hi < 0 || lo < 0) {
      throw new OAuthError('invalid_request', 'The form has malformed percent-encoding.', {
        reason: 'form-malformed',
      });
    }
    out[n++] = hi * 16 + lo;
    i += 2;
  }
  try {
    return utf8.decode(out.subarray(0, n));
  } catch {
    throw new OAuthError('invalid_request', 'The form encodes bytes that are not UTF-8.', {
      reason: 'form-malformed',
    });
  }
}

function hexValue(byte: number | undefined): number {
  if (byte === undefined) return -1;
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  const lower = byte | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}

/** A parameter name as the description may show it: printable ASCII, 40 characters at most. */
function safeName(name: string): string {
  return /^[\x21-\x7e]{1,40}$/.test(name) ? name : '(a parameter)';
}
