/**
 * Whether this process could create or write a file, found without creating anything:
 * start-up checks the files its stores will open together with its other inputs, so one
 * run reports every problem, and a refused start leaves nothing behind.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/**
 * Null when `file` is a regular file this process may read and write in a directory it
 * may create entries in, or is missing and its nearest existing ancestor is a directory
 * it may create entries in; else why not (an errno code, or the path concerned).
 */
export async function unwritableFileReason(file: string): Promise<string | null> {
  const path = resolve(file);
  try {
    const info = await stat(path);
    if (!info.isFile()) return 'not a regular file';
    await access(path, constants.R_OK | constants.W_OK);
  } catch (error) {
    const code = errorCode(error);
    if (code !== 'ENOENT') return code;
  }
  // The stores also write beside the file (compaction renames a temporary file over it):
  // its directory must take new entries — or, when missing, the nearest existing ancestor,
  // under which it will be made.
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    try {
      const info = await stat(dir);
      if (!info.isDirectory()) return `${dir} is not a directory`;
      await access(dir, constants.W_OK | constants.X_OK);
      return null;
    } catch (error) {
      const code = errorCode(error);
      if (code !== 'ENOENT') return `${dir}: ${code}`;
    }
    if (dirname(dir) === dir) return null;
  }
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? 'error';
}
