/**
 * The gateway under test answers as `https://portaria.test` (its configured issuer): a
 * `fetch` for the client libraries that sends every request for that origin to the
 * loopback gateway instead, so they see the published https URLs and nothing else.
 */
import type { Gateway } from '../helpers/fixture.js';

export const PUBLIC_ORIGIN = 'https://portaria.test';

export function gatewayFetch(gw: Gateway): typeof fetch {
  return (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith(PUBLIC_ORIGIN)) throw new Error(`unexpected request to ${url}`);
    return fetch(gw.url + url.slice(PUBLIC_ORIGIN.length), init);
  };
}
