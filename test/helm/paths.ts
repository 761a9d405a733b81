/** Where the chart and the repository are, from this compiled file's location. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'helm'))) return dir;
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error('no repository root (package.json and helm/) above this file');
    dir = parent;
  }
}

/** The repository root. */
export const REPO_ROOT = findRoot();
/** The chart directory. */
export const CHART_DIR = join(REPO_ROOT, 'helm', 'portaria');
/** The chart's values schema. */
export const VALUES_SCHEMA = join(CHART_DIR, 'values.schema.json');
