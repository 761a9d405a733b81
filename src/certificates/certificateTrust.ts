/**
 * The trust anchors and CRLs a header certificate is checked against
 * (`clientCertificate.caFiles`, `clientCertificate.crlFiles`), read once at start. Every
 * file's problem is reported together, each naming its setting and path (never the
 * content): a file that cannot be read, holds no certificate or CRL, or holds one that
 * does not parse; a CRL whose issuer is one of the anchors but whose signature that
 * anchor's key does not verify; a CRL this reader cannot use (`revocationList.ts`).
 *
 * A CRL whose issuer is no anchor is kept: it may be an intermediate's, whose key only
 * arrives with a request's chain, and it is used only once that key verifies it. Files
 * are not watched: new CRLs need a restart.
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from '../config/configError.js';
import { type ParsedCertificate, parseCertificate } from './certificateFields.js';
import { certificatesOfFile, PemError, revocationListsOfFile } from './pemCertificates.js';
import { parseRevocationList, type RevocationList, RevocationListError } from './revocationList.js';

export interface CertificateTrust {
  /** Trust anchors; none: the terminator's chain verification is trusted as is. */
  readonly anchors: readonly ParsedCertificate[];
  readonly revocationLists: readonly RevocationList[];
}

export const NO_CERTIFICATE_TRUST: CertificateTrust = Object.freeze({
  anchors: [],
  revocationLists: [],
});

/** Each file's content, or why it could not be read (a problem naming the setting). */
function readAll(setting: string, files: readonly string[]): Promise<(Buffer | string)[]> {
  return Promise.all(
    files.map(async (file, i) => {
      try {
        return await readFile(file);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? 'error';
        return `${setting}[${i}]: cannot read ${file} (${code})`;
      }
    }),
  );
}

function why(error: unknown): string {
  if (error instanceof PemError || error instanceof RevocationListError) return error.message;
  return 'it does not parse';
}

export async function loadCertificateTrust(
  caFiles: readonly string[],
  crlFiles: readonly string[],
): Promise<CertificateTrust> {
  const problems: string[] = [];
  const [caContents, crlContents] = await Promise.all([
    readAll('clientCertificate.caFiles', caFiles),
    readAll('clientCertificate.crlFiles', crlFiles),
  ]);
  const anchors: ParsedCertificate[] = [];
  caContents.forEach((content, i) => {
    if (typeof content === 'string') {
      problems.push(content);
      return;
    }
    const where = `clientCertificate.caFiles[${i}]: ${caFiles[i]}`;
    try {
      certificatesOfFile(content).forEach((der, n) => {
        try {
          anchors.push(parseCertificate(der));
        } catch {
          problems.push(`${where}: certificate ${n + 1} is not an X.509 certificate`);
        }
      });
    } catch (error) {
      problems.push(`${where}: ${why(error)}`);
    }
  });
  const revocationLists: RevocationList[] = [];
  crlContents.forEach((content, i) => {
    if (typeof content === 'string') {
      problems.push(content);
      return;
    }
    const where = `clientCertificate.crlFiles[${i}]: ${crlFiles[i]}`;
    try {
      revocationListsOfFile(content).forEach((der, n) => {
        const label = `CRL ${n + 1}`;
        try {
          const list = parseRevocationList(der);
          const named = anchors.filter((a) => a.subjectName.equals(list.issuerName));
          if (named.length > 0 && !named.some((a) => list.signedBy(a.x509.publicKey))) {
            problems.push(
              `${where}: ${label}'s signature does not verify with the CA that issued it`,
            );
          } else {
            revocationLists.push(list);
          }
        } catch (error) {
          problems.push(`${where}: ${label} is not usable: ${why(error)}`);
        }
      });
    } catch (error) {
      problems.push(`${where}: ${why(error)}`);
    }
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return { anchors, revocationLists };
}
