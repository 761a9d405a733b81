/** Reading the admin listener's Prometheus exposition in tests. */

/** GET `<adminUrl>/metrics` as text. */
export async function scrape(adminUrl: string): Promise<string> {
  const res = await fetch(`${adminUrl}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return res.text();
}

/**
 * The value of one sample, written as it appears in the exposition without the value
 * (`portaria_jwks_keys{issuer="partner"}`); undefined when the series is absent.
 */
export function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

/** `sample` read from a fresh scrape. */
export async function metric(adminUrl: string, series: string): Promise<number | undefined> {
  return sample(await scrape(adminUrl), series);
}
