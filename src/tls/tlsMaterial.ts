/**
 * The public listener's TLS files, read and checked together (every problem at once,
 * each naming its setting): the certificate chain and its key (`server.tls`), the CAs and
 * CRLs client certificates are verified against (`clientCertificate`). A reload reads
 * them again the same way; a file that fails keeps the running context.
 *
 * Checked here: each file readable and holding what its setting says (PEM certificates,
 * an unencrypted private key, CRLs), the key matching the certificate, an RSA key where
 * the policy's TLS 1.2 suites need one, and then OpenSSL's own parse of the whole context.
 * Not checked: the server certificate's names (the operator's choice) and the CRLs' next
 * update (OpenSSL refuses a certificate under an expired CRL: docs/security.md).
 */
import { createHash, createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
import { ConfigError } from '../config/configError.js';
import type { ClientCertificateConfig, Config, ServerTlsConfig } from '../config/types.js';
import { needsRsaKey, policyOptions } from './tlsPolicy.js';

export interface TlsMaterial {
  /** PEM: the server certificate and its chain. */
  readonly cert: string;
  /** PEM: its private key. */
  readonly key: string;
  /** PEM bundles of the client CAs; empty when the handshake asks for no certificate. */
  readonly ca: readonly string[];
  /** PEM CRLs. */
  readonly crl: readonly string[];
  /** SHA-256 over the CA and CRL files: resumption keys change with it (`ticketKeys.ts`). */
  readonly trustDigest: Buffer;
  /** The server certificate's validity, for the start-up and reload warnings. */
  readonly validFrom: Date;
  readonly validTo: Date;
}

export interface TlsSettings {
  readonly tls: ServerTlsConfig;
  readonly clientCertificate: Pick<ClientCertificateConfig, 'source' | 'caFiles' | 'crlFiles'>;
}

export function tlsSettingsOf(config: Pick<Config, 'server' | 'clientCertificate'>): TlsSettings {
  return { tls: config.server.tls, clientCertificate: config.clientCertificate };
}

const CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;
const CRL = /-----BEGIN X509 CRL-----[^-]+-----END X509 CRL-----/g;

/** The files a reload watches: the certificate and key, and the client CAs and CRLs in use. */
export function tlsFilePaths(settings: TlsSettings): string[] {
  const { tls, clientCertificate } = settings;
  const own = [tls.certFile, tls.keyFile].filter((file): file is string => file !== null);
  if (tls.clientCertificates === 'off') return own;
  return [...own, ...clientCertificate.caFiles, ...clientCertificate.crlFiles];
}

/** Why the server certificate cannot be served at `now` (expired, not yet valid), or null. */
export function validityProblem(material: TlsMaterial, now: number): string | null {
  if (now > material.validTo.getTime()) {
    return `the server certificate expired at ${material.validTo.toISOString()}`;
  }
  if (now < material.validFrom.getTime()) {
    return `the server certificate is valid only from ${material.validFrom.toISOString()}`;
  }
  return null;
}

/** Reads and checks every TLS file; throws `ConfigError` with each problem. */
export async function loadTlsMaterial(settings: TlsSettings): Promise<TlsMaterial> {
  const { tls, clientCertificate } = settings;
  const problems: string[] = [];
  const asks = tls.clientCertificates !== 'off';
  const caFiles = asks ? clientCertificate.caFiles : [];
  const crlFiles = asks ? clientCertificate.crlFiles : [];
  const [certRead, keyRead, caReads, crlReads] = await Promise.all([
    readText('server.tls.certFile', tls.certFile),
    readText('server.tls.keyFile', tls.keyFile),
    Promise.all(caFiles.map((file, i) => readText(`clientCertificate.caFiles[${i}]`, file))),
    Promise.all(crlFiles.map((file, i) => readText(`clientCertificate.crlFiles[${i}]`, file))),
  ]);
  // In the order of the settings, each file's problem where it is.
  const text = (read: Read): string | null => {
    if ('problem' in read) problems.push(read.problem);
    return 'text' in read ? read.text : null;
  };
  const certText = text(certRead);
  const leaf = certText === null ? null : leafCertificate(certText, problems);
  const keyText = text(keyRead);
  const key = keyText === null ? null : privateKey(keyText, problems);
  if (leaf !== null && key !== null) {
    if (!leaf.checkPrivateKey(key)) {
      problems.push(
        'server.tls.keyFile: is not the key of the certificate in server.tls.certFile (the first one)',
      );
    } else if (needsRsaKey(tls) && key.asymmetricKeyType !== 'rsa') {
      problems.push(
        `server.tls.keyFile: policy "fapi" permits TLS 1.2 only with RSA suites (FAPI 1.0 Advanced §8.5) and this key is ${key.asymmetricKeyType ?? 'not RSA'}: use an RSA key, or server.tls.minVersion: TLSv1.3`,
      );
    }
  }
  const caTexts = caReads.map((read, i) => {
    const ca = text(read);
    if (ca !== null) checkCertificates(`clientCertificate.caFiles[${i}]`, ca, problems);
    return ca;
  });
  const crlTexts = crlReads.map((read, i) => {
    const crl = text(read);
    if (crl !== null && (crl.match(CRL) ?? []).length === 0) {
      problems.push(`clientCertificate.crlFiles[${i}]: holds no PEM CRL ("BEGIN X509 CRL")`);
    }
    return crl;
  });
  if (problems.length > 0) throw new ConfigError(problems);

  const material: TlsMaterial = {
    cert: certText as string,
    key: keyText as string,
    ca: caTexts as string[],
    crl: crlTexts as string[],
    trustDigest: trustDigestOf(caTexts as string[], crlTexts as string[]),
    validFrom: new Date((leaf as X509Certificate).validFrom),
    validTo: new Date((leaf as X509Certificate).validTo),
  };
  try {
    // OpenSSL's own reading of the whole context (a CRL it cannot parse, say).
    createSecureContext({ ...contextFiles(material), ...policyOptions(tls) });
  } catch (error) {
    throw new ConfigError([`server.tls: OpenSSL refused the files: ${(error as Error).message}`]);
  }
  return material;
}

/** The files' part of a secure context's options. */
export function contextFiles(material: TlsMaterial): {
  cert: string;
  key: string;
  ca?: string[];
  crl?: string[];
} {
  return {
    cert: material.cert,
    key: material.key,
    ...(material.ca.length > 0 ? { ca: [...material.ca] } : {}),
    ...(material.crl.length > 0 ? { crl: [...material.crl] } : {}),
  };
}

type Read = { readonly text: string } | { readonly problem: string } | { readonly none: true };

async function readText(setting: string, file: string | null): Promise<Read> {
  if (file === null) return { none: true };
  try {
    return { text: await readFile(file, 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    return { problem: `${setting}: cannot read ${file} (${code})` };
  }
}

function leafCertificate(text: string, problems: string[]): X509Certificate | null {
  return checkCertificates('server.tls.certFile', text, problems)[0] ?? null;
}

/** Every certificate of a PEM bundle, parsed; a problem for a bundle with none or a bad one. */
function checkCertificates(setting: string, text: string, problems: string[]): X509Certificate[] {
  const blocks = text.match(CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    problems.push(`${setting}: holds no PEM certificate ("BEGIN CERTIFICATE")`);
    return [];
  }
  const out: X509Certificate[] = [];
  for (const [i, block] of blocks.entries()) {
    try {
      out.push(new X509Certificate(block));
    } catch {
      problems.push(`${setting}: certificate ${i + 1} is not a valid X.509 certificate`);
    }
  }
  return out;
}

function privateKey(text: string, problems: string[]): KeyObject | null {
  try {
    return createPrivateKey(text);
  } catch {
    problems.push('server.tls.keyFile: holds no unencrypted PEM private key');
    return null;
  }
}

function trustDigestOf(ca: readonly string[], crl: readonly string[]): Buffer {
  const hash = createHash('sha256');
  for (const text of [...ca, '\0', ...crl]) hash.update(text).update('\0');
  return hash.digest();
}
