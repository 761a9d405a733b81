/**
 * Client certificates with a chosen subject and subject alternative names, signed by a
 * test CA's key with the real `openssl x509 -req` (the CA's `openssl ca` database is
 * left alone), for the RFC 8705 `tls_client_auth` tests; and the JWK Set that registers
 * a certificate's key for `self_signed_tls_client_auth` (kid = RFC 7638 thumbprint).
 */
import { execFile } from 'node:child_process';
import { randomBytes, X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { IssuedCertificate, TestCa } from '../helpers/certificates.js';

const run = promisify(execFile);

export interface NamedCertificateOptions {
  /** openssl's `-subj` form, ASN.1 order: `/C=PT/O=Acme/CN=partner`; `+` for a multi-valued RDN. */
  readonly subject: string;
  /** `subjectAltName` entries in openssl's form: `DNS:a.example`, `URI:spiffe://…`, `IP:10.0.0.1`, `email:a@b`. */
  readonly altNames?: readonly string[];
}

/** A client certificate for `file` (its file name in `dir`) that `ca` signs. */
export async function namedClientCertificate(
  dir: string,
  ca: TestCa,
  file: string,
  options: NamedCertificateOptions,
): Promise<IssuedCertificate> {
  const certFile = join(dir, `${file}.crt`);
  const keyFile = join(dir, `${file}.key`);
  const csr = join(dir, `${file}.csr`);
  const ext = join(dir, `${file}.ext`);
  const altNames =
    options.altNames === undefined ? '' : `subjectAltName=${options.altNames.join(',')}\n`;
  await writeFile(
    ext,
    `basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n${altNames}`,
  );
  await openssl([
    'req',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    keyFile,
    '-out',
    csr,
    '-multivalue-rdn',
    '-utf8',
    '-subj',
    options.subject,
  ]);
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-set_serial',
    `0x${randomBytes(8).toString('hex')}`,
    '-days',
    '30',
    '-extfile',
    ext,
    '-out',
    certFile,
  ]);
  const cert = await readFile(certFile, 'utf8');
  return {
    name: file,
    certFile,
    keyFile,
    cert,
    key: await readFile(keyFile, 'utf8'),
    der: Buffer.from(new X509Certificate(cert).raw),
  };
}

/** `{keys: [jwk]}` of the certificate's public key, its `kid` the key's RFC 7638 thumbprint. */
export async function certificateJwks(certificate: IssuedCertificate): Promise<string> {
  const jwk = new X509Certificate(certificate.cert).publicKey.export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint(jwk, 'sha256');
  return JSON.stringify({ keys: [{ ...jwk, kid, use: 'sig' }] });
}

async function openssl(args: readonly string[]): Promise<void> {
  try {
    await run('openssl', args);
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`openssl ${args[0]} failed: ${stderr.trim()}`);
  }
}
