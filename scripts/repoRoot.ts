/** The repository root, found from the compiled script's location (`dist-test/scripts/`). */
import { stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The nearest directory above this file that holds package.json. */
export async function repoRoot(): Promise<string> {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const found = await stat(join(dir, 'package.json')).then(
      (s) => s.isFile(),
      () => false,
    );
    if (found) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('no package.json above this file');
    dir = parent;
  }
}
