/**
 * A JSON document the gateway serves about itself (the public key set, the OpenAPI
 * description, the discovery documents) and how long clients may keep it. The text
 * comes from a function so a document that changes (the key set, on rotation and
 * reload) is served current; the function returns a pre-serialised string, so a request
 * does no serialisation work. The public entry serves it (`http/serveDocument.ts`).
 */
export class StaticDocument {
  readonly json: () => string;
  readonly headers: Readonly<Record<string, string>>;

  constructor(json: () => string, cacheControl: string) {
    this.json = json;
    this.headers = { 'cache-control': cacheControl };
  }

  /** A document that never changes, serialised once. */
  static of(document: unknown, cacheControl: string): StaticDocument {
    const json = JSON.stringify(document);
    return new StaticDocument(() => json, cacheControl);
  }
}
