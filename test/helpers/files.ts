/** File writes as operators (and Kubernetes) make them: never a half-written file. */
import { randomBytes } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Writes `text` to a temporary file beside `path`, then renames it over `path`. */
export async function replaceAtomically(path: string, text: string): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(4).toString('hex')}.tmp`);
  await writeFile(temp, text);
  await rename(temp, path);
}
