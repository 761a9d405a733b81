/**
 * Writes `openapi.json` at the repository root from `src/documents/openApiDocument.ts`
 * (`npm run openapi`). The drift test renders the same text and compares, so the
 * committed file and the served document cannot disagree.
 *
 * Run directly it writes the file; imported it only exports the rendering helpers.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '../src/documents/openApiDocument.js';
import { repoRoot } from './repoRoot.js';

/** The committed text: 2-space indentation and a trailing newline. */
export function renderOpenApi(): string {
  return `${JSON.stringify(openApiDocument, null, 2)}\n`;
}

export async function openApiPath(): Promise<string> {
  return join(await repoRoot(), 'openapi.json');
}

export async function readCommittedOpenApi(): Promise<string> {
  return readFile(await openApiPath(), 'utf8');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const path = await openApiPath();
  await writeFile(path, renderOpenApi());
  process.stdout.write(`wrote ${path}\n`);
}
