/**
 * A start-up failure: every problem found, each prefixed by the path of the setting
 * (`routes[2].prefix: must start with "/"`). Thrown by config, client-file and key
 * loading; `main.ts` prints the list and exits non-zero.
 */
export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[], source?: string) {
    const head = source ? `invalid configuration (${source})` : 'invalid configuration';
    super(`${head}:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}
