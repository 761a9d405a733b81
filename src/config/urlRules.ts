/** The URL rules settings share: absolute, of the right scheme, an upstream's shape. */

/** Records a problem unless `value` is an absolute URL of one of `protocols` (null: any). */
export function checkUrl(
  problems: string[],
  at: string,
  value: string,
  protocols: string[] | null,
): URL | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    problems.push(`${at}: must be an absolute URL`);
    return null;
  }
  if (protocols && !protocols.includes(url.protocol)) {
    problems.push(`${at}: must use ${protocols.join(' or ')}`);
    return null;
  }
  return url;
}

/** An upstream (or key set) URL: http(s), no credentials, no query or fragment. */
export function checkUpstream(problems: string[], at: string, value: string): void {
  const url = checkUrl(problems, at, value, ['http:', 'https:']);
  if (!url) return;
  if (url.username || url.password) problems.push(`${at}: must not carry credentials`);
  if (url.search || url.hash) problems.push(`${at}: must not have a query or fragment`);
}

/** localhost, 127.0.0.0/8 or [::1]: a host no network path leads to. */
export function isLoopbackHost(hostname: string): boolean {
  return (
    hostname === 'localhost' ||
    hostname === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
  );
}
