/**
 * The file in a keys directory whose owner and permissions a new key file or a first
 * `schedule.json` takes (see `lib/atomicWrite.ts`): the operator gave the existing keys
 * to the user the gateway runs as (or to its group), and a key written by the CLI run as
 * root or as an administrator must stay readable by that gateway — else its reload fails
 * and the rotation silently does not happen. The first key file in name order (key files
 * before `schedule.json`); undefined in an empty or absent directory.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

export async function keyFileModel(dir: string): Promise<string | undefined> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return undefined;
  }
  const visible = names.filter((name) => !name.startsWith('.')).sort();
  const model =
    visible.find((name) => name.endsWith('.pem') || name.endsWith('.jwk.json')) ??
    visible.find((name) => name === 'schedule.json');
  return model === undefined ? undefined : join(dir, model);
}
