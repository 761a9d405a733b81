/** `private_key_jwt` clients for gateway tests: the client entry, its key file, its assertions. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { JWT_BEARER_ASSERTION } from '../../src/oauth/clientAssertion.js';
import type { ClientSpec, Gateway } from '../helpers/fixture.js';
import type { TestKey } from '../helpers/jwksServer.js';

/** A client authenticating with `private_key_jwt` only, its keys in `<id>.jwks.json`. */
export function assertionClient(id: string): ClientSpec {
  return {
    id,
    secret: '',
    scopes: ['orders:read'],
    extra: { authMethods: ['private_key_jwt'], jwksFile: `${id}.jwks.json` },
  };
}

/** Writes the client's key file next to the gateway's clients file (read at first use). */
export function writeClientKeys(gw: Gateway, id: string, key: TestKey): Promise<void> {
  return writeFile(join(gw.dir, `${id}.jwks.json`), JSON.stringify({ keys: [key.jwk] }));
}

/** A fresh assertion (new `jti`, 60 s) for the test gateway's token endpoint. */
export function signedAssertion(id: string, key: TestKey): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: id,
    sub: id,
    aud: 'https://portaria.test/oauth2/token',
    jti: crypto.randomUUID(),
    exp: now + 60,
  })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid })
    .sign(key.privateKey);
}

/** The client-credentials form authenticated by `assertion`. */
export function assertionForm(assertion: string): Record<string, string> {
  return {
    grant_type: 'client_credentials',
    client_assertion_type: JWT_BEARER_ASSERTION,
    client_assertion: assertion,
  };
}
