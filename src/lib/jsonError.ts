/**
 * A JSON.parse failure described without quoting the text: V8's messages can carry a
 * snippet of the input (`Unexpected token '}', "{"hash": "sha256:…" is not valid JSON`),
 * and the input may be a file of secret hashes. Keeps where it failed, when V8 says.
 */
export function jsonErrorWhere(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  const position = /at position (\d+)/.exec(message)?.[1];
  return position === undefined ? 'not valid JSON' : `not valid JSON at character ${position}`;
}
