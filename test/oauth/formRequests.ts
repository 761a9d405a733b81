/** Form requests to the gateway's OAuth endpoints, and the clients the tests use. */
import type { ClientSpec, Gateway } from '../helpers/fixture.js';
import { CLIENT_ID, CLIENT_SECRET, DEFAULT_CLIENTS } from '../helpers/fixture.js';

export const REVOKE_PATH = '/oauth2/revoke';
export const INTROSPECT_PATH = '/oauth2/introspect';

/** A resource server allowed to introspect. */
export const RESOURCE_SERVER = {
  id: 'orders-api',
  secret: 'orders-api-secret-0123456789abcdefghijklmn',
  scopes: ['introspection'],
  extra: { permissions: ['introspect'] },
} satisfies ClientSpec;

export const CLIENTS: ClientSpec[] = [...DEFAULT_CLIENTS, RESOURCE_SERVER];

/** `client_secret_basic`: id and secret form-urlencoded, then Base64 (RFC 6749 §2.3.1). */
export function basic(id = CLIENT_ID, secret = CLIENT_SECRET): string {
  const encode = (text: string) => new URLSearchParams({ v: text }).toString().slice(2);
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;
}

export function postForm(
  gw: Gateway,
  path: string,
  form: Record<string, string>,
  authorization?: string,
): Promise<Response> {
  return fetch(gw.url + path, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(authorization === undefined ? {} : { authorization }),
    },
    body: new URLSearchParams(form).toString(),
  });
}

/** GET through the catch-all route with a bearer token: the status. */
export async function statusThroughRoute(gw: Gateway, token: string): Promise<number> {
  const res = await fetch(`${gw.url}/v1/orders/1`, {
    headers: { authorization: `Bearer ${token}` },
  });
  await res.arrayBuffer();
  return res.status;
}

/** The `error` of an RFC 6749 §5.2 answer. */
export async function errorOf(res: Response): Promise<unknown> {
  return ((await res.json()) as { error?: unknown }).error;
}
