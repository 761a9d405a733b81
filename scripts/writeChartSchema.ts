/**
 * Writes the `config` part of `helm/portaria/values.schema.json` from the gateway's
 * configuration schema (see `chartConfigSchema.ts`); the rest of the file is
 * edited by hand. Run after changing `src/config/schema.ts`:
 *
 *   npm run chart-schema   (tsc, then node dist-test/scripts/writeChartSchema.js)
 *
 * The file is then formatted with Biome (it is linted like every JSON file). The chart
 * tests compare the file with `chartConfigSchema()` and fail on any drift.
 */
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chartConfigSchema } from './chartConfigSchema.js';
import { repoRoot } from './repoRoot.js';

/** The values schema with its `config` property replaced. */
export function withConfigSchema(current: { properties: Record<string, unknown> }): unknown {
  return { ...current, properties: { ...current.properties, config: chartConfigSchema() } };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = await repoRoot();
  const schemaFile = join(root, 'helm', 'portaria', 'values.schema.json');
  const current = JSON.parse(await readFile(schemaFile, 'utf8')) as {
    properties: Record<string, unknown>;
  };
  await writeFile(schemaFile, `${JSON.stringify(withConfigSchema(current), null, 2)}\n`);
  execFileSync(join(root, 'node_modules', '.bin', 'biome'), ['format', '--write', schemaFile], {
    stdio: 'inherit',
  });
  process.stdout.write(`wrote ${schemaFile}\n`);
}
