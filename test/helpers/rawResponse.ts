/**
 * Parses the raw bytes `rawRequest` returns into responses (status, headers, body), so a
 * test can assert on exact header sets and count how many responses one connection got.
 * Bodies are framed by `Content-Length` (none for 204 and 304), or run to the end of the
 * text without one.
 */

export interface RawResponse {
  readonly status: number;
  /** Lowercased field name → every value, in order. */
  readonly headers: ReadonlyMap<string, readonly string[]>;
  readonly body: string;
}

export function parseResponses(raw: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = raw;
  for (let guard = 0; guard < 100 && rest.length > 0; guard++) {
    const end = rest.indexOf('\r\n\r\n');
    if (end === -1) break;
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
    if (match === null) break;
    const headers = new Map<string, string[]>();
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
    }
    const status = Number(match[1]);
    // A 204 or 304 has no body whatever its Content-Length says (RFC 9110 §6.4.1).
    const length = status === 204 || status === 304 ? '0' : headers.get('content-length')?.[0];
    const bodyStart = end + 4;
    const bodyEnd = length === undefined ? rest.length : bodyStart + Number(length);
    out.push({ status, headers, body: rest.slice(bodyStart, bodyEnd) });
    rest = rest.slice(bodyEnd);
  }
  return out;
}

/** The single response on a connection; throws when there is not exactly one. */
export function onlyResponse(raw: string): RawResponse {
  const responses = parseResponses(raw);
  if (responses.length !== 1) {
    throw new Error(`expected one response, got ${responses.length}: ${JSON.stringify(raw)}`);
  }
  return responses[0] as RawResponse;
}

/** One header's value (several joined with `, `), or undefined. */
export function headerOf(response: RawResponse, name: string): string | undefined {
  return response.headers.get(name.toLowerCase())?.join(', ');
}

/** The problem-details body of a raw response; throws if it is not one. */
export function rawProblemOf(response: RawResponse): Record<string, unknown> {
  const type = headerOf(response, 'content-type');
  if (type !== 'application/problem+json') {
    throw new Error(`expected problem+json, got ${type} (${response.status})`);
  }
  return JSON.parse(response.body) as Record<string, unknown>;
}
