/**
 * Fields that CDNs, load balancers and frameworks set to tell an upstream the client's
 * address, the host or path the client asked for, or a method to use instead of the
 * request's. Arriving at the gateway they were written by the caller, so the gateway
 * removes them before forwarding (`proxy/headers.ts`), in every case and `_` spelling;
 * `forwardCallerHeaders` may name some to let them through. Lowercase; why each family
 * is removed: docs/security.md.
 */
export const CALLER_HEADER_FAMILIES = {
  /** A client address an upstream would log, rate-limit or allow-list on. */
  address: [
    'true-client-ip',
    'x-client-ip',
    'client-ip',
    'x-cluster-client-ip',
    'cf-connecting-ip',
    'fastly-client-ip',
    'x-originating-ip',
    'x-remote-ip',
    'x-remote-addr',
    'x-original-forwarded-for',
    'x-envoy-external-address',
  ],
  /** A host an upstream would build links, redirects or tenant lookups from. */
  host: ['x-host', 'x-original-host', 'x-http-host-override'],
  /** A path an upstream would route or authorise on instead of the request's. */
  path: ['x-envoy-original-path', 'x-original-uri'],
  /** A method an upstream would run instead of the request's (a POST becomes TRACE). */
  method: ['x-http-method-override', 'x-http-method', 'x-method-override'],
} as const satisfies Record<string, readonly string[]>;

export const CALLER_HEADERS: readonly string[] = Object.freeze(
  Object.values(CALLER_HEADER_FAMILIES).flat(),
);

/** A field name as the gateway compares it: lowercase, `_` read as `-`. */
export function headerKey(name: string): string {
  return name.toLowerCase().replaceAll('_', '-');
}
